/* inventory: a tiny stock keeper driven by `;`-separated commands in one argument, e.g.
 * `inventory "add bolt 5;add nut 9;get nut;sum"`.
 * Triage corpus program (bench/triage): its seeded bugs are listed in ../bugs.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct item {
    char *name;
    long qty;
};

static struct item table[16];
static int count;

static struct item *find(const char *name) {
    for (int i = 0; i < count; i++)
        /* BUG deleted-slot: a deleted item keeps its slot with a NULL name. */
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static void report(const struct item *it) {
    /* BUG missing-item (get) and empty-max (max) both arrive here with NULL. */
    printf("%s: %ld\n", it->name, it->qty);
}

static void cmd_add(char *args) {
    char *name = strtok(args, " ");
    char *qty = strtok(NULL, " ");
    if (!name || count == 16)
        return;
    struct item *it = find(name);
    if (!it) {
        it = &table[count++];
        it->name = strdup(name);
        it->qty = 0;
    }
    /* BUG no-qty: `add NAME` without a quantity passes NULL to atol. */
    it->qty += atol(qty); // fault: no-qty
}

static void cmd_del(char *args) {
    struct item *it = find(strtok(args, " "));
    if (it) {
        free(it->name);
        it->name = NULL; // fault: deleted-slot
    }
}

static void cmd_get(char *args) {
    report(find(strtok(args, " "))); // fault: missing-item
}

static void cmd_max(void) {
    struct item *best = NULL;
    for (int i = 0; i < count; i++)
        if (table[i].name && (!best || table[i].qty > best->qty))
            best = &table[i];
    report(best); // fault: empty-max
}

static void cmd_sum(void) {
    long total = 0;
    size_t width = 0;
    for (int i = 0; i < count; i++) {
        size_t w = strlen(table[i].name);
        width = w > width ? w : width;
        total += table[i].qty;
    }
    printf("%ld items (names up to %zu chars)\n", total, width);
}

static void run(char *line) {
    char *rest = strchr(line, ' ');
    if (rest)
        *rest++ = '\0';
    else
        rest = line + strlen(line);
    if (strcmp(line, "add") == 0)
        cmd_add(rest);
    else if (strcmp(line, "del") == 0)
        cmd_del(rest);
    else if (strcmp(line, "get") == 0)
        cmd_get(rest);
    else if (strcmp(line, "max") == 0)
        cmd_max();
    else if (strcmp(line, "sum") == 0)
        cmd_sum();
    else
        printf("unknown command %s\n", line);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: inventory COMMANDS\n");
        return 2;
    }
    char *save = NULL;
    for (char *line = strtok_r(argv[1], ";", &save); line; line = strtok_r(NULL, ";", &save))
        run(line);
    return 0;
}
