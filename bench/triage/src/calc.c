/* calc: a reverse-Polish calculator over one argument, e.g. `calc "3 4 + x 2 * /"`.
 * Triage corpus program (bench/triage): its seeded bugs are listed in ../bugs.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct num {
    long v;
};

static struct num pool[64];
static int npool;
static struct num *stack[32];
static int depth;

static struct num vars[3] = {{7}, {11}, {13}};
static const char *var_names[3] = {"x", "y", "z"};

static struct num *make(long v) {
    struct num *n = &pool[npool++ % 64];
    n->v = v;
    return n;
}

static void push(struct num *n) {
    if (depth < 32)
        stack[depth++] = n;
}

/* BUG underflow: an empty stack gives NULL, which the operators use unchecked. */
static struct num *pop(void) {
    if (depth == 0)
        return NULL; // fault: underflow
    return stack[--depth];
}

/* BUG unknown-var: an unknown name gives NULL, pushed as if it were a value. */
static struct num *lookup(const char *name) {
    for (int i = 0; i < 3; i++)
        if (strcmp(var_names[i], name) == 0)
            return &vars[i];
    return NULL; // fault: unknown-var
}

static long divide(long a, long b) {
    /* BUG zero-divisor: no check that b != 0 (here and in modulo). */
    return a / b; // fault: zero-divisor
}

static long modulo(long a, long b) {
    long r = a % b;
    return r < 0 ? r + b : r;
}

static struct num *apply(char op) {
    struct num *b = pop();
    struct num *a = pop();
    long x = a->v, y = b->v;
    switch (op) {
    case '+':
        return make(x + y);
    case '-':
        return make(x - y);
    case '*':
        return make(x * y);
    case '/':
        return make(divide(x, y));
    case '%':
        return make(modulo(x, y));
    }
    return make(0);
}

static long eval(char *text) {
    for (char *tok = strtok(text, " "); tok; tok = strtok(NULL, " ")) {
        if (strchr("+-*/%", tok[0]) && tok[1] == '\0')
            push(apply(tok[0]));
        else if (tok[0] >= 'a' && tok[0] <= 'z')
            push(lookup(tok));
        else
            push(make(strtol(tok, NULL, 10)));
    }
    struct num *r = pop();
    return r ? r->v : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: calc EXPRESSION\n");
        return 2;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", argv[1]);
    printf("%ld\n", eval(buf));
    return 0;
}
