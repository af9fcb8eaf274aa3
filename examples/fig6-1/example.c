/* The running example of dissertation Fig. 6.1, as a real C program: main -> foo -> bar,
 * crashing in bar through a null pointer. Run as `./example` (argc == 1). */
#include <stdio.h>
static int *p;

static void bar(int v)
{
    if (v > 1)
        *p = v; /* crash: p is NULL */
}

static void foo(int v)
{
    if (v > 0)
        bar(v + 1);
    v--;
}

int main(int argc, char **argv)
{
    (void)argv;
    if (argc > 2)
        puts("Processed");
    else
        foo(argc);
    for (int i = 0; i < argc; i++)
        bar(i);
    return 0;
}
