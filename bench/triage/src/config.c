/* config: reads an INI-like text from one argument (`\n` or `|` between lines), e.g.
 * `config "[net]|port = 80|retries = 3|[disk]|size = 9"`, and prints per-section averages.
 * Triage corpus program (bench/triage): its seeded bugs are listed in ../bugs.md. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct section {
    char name[32];
    long total;
    int entries;
    int depth;
};

static struct section sections[8];
static int nsections;

static char *trim(char *s) {
    while (*s == ' ')
        s++;
    char *end = s + strlen(s);
    while (end > s && end[-1] == ' ')
        *--end = '\0';
    return s;
}

/* BUG unterminated-quote: a value opening a quote without closing it gives NULL. */
static char *unquote(char *v) {
    if (*v != '"')
        return v;
    char *close = strchr(v + 1, '"');
    if (!close)
        return NULL; // fault: unterminated-quote
    *close = '\0';
    return v + 1;
}

static void open_section(char *line) {
    struct section *s = &sections[nsections % 8];
    nsections++;
    char *end = strchr(line, ']');
    if (end)
        *end = '\0';
    snprintf(s->name, sizeof s->name, "%s", line + 1);
    s->total = 0;
    s->entries = 0;
    /* Nested sections `[a.b.c]`: one level per dot. */
    s->depth = 0;
    for (char *p = s->name; *p; p++)
        if (*p == '.')
            s->depth++;
    /* BUG too-deep: nesting is limited to 3 levels, enforced only by this assertion. */
    assert(s->depth < 3); // fault: too-deep
}

static void set_value(char *line) {
    if (nsections == 0)
        return;
    struct section *s = &sections[(nsections - 1) % 8];
    char *eq = strchr(line, '=');
    if (!eq)
        return;
    *eq = '\0';
    char *value = unquote(trim(eq + 1));
    size_t n = strlen(value);
    s->total += n && value[0] >= '0' && value[0] <= '9' ? atol(value) : (long)n;
    s->entries++;
}

static void summary(void) {
    for (int i = 0; i < nsections && i < 8; i++) {
        const struct section *s = &sections[i];
        /* BUG empty-section: a section without entries divides by zero. */
        printf("[%s] average %ld over %d\n", s->name, s->total / s->entries, s->entries); // fault: empty-section
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: config TEXT\n");
        return 2;
    }
    char *save = NULL;
    for (char *line = strtok_r(argv[1], "|\n", &save); line; line = strtok_r(NULL, "|\n", &save)) {
        line = trim(line);
        if (line[0] == '[')
            open_section(line);
        else if (line[0] != '#' && line[0] != '\0')
            set_value(line);
    }
    summary();
    return 0;
}
