/* bench: placeholder replaced by the benchmark client. */
#include <stdio.h>
#include "cli/cli.h"
int cli_bench(int argc, char **argv) { (void)argc; (void)argv; fputs("silt: bench is not built yet\n", stderr); return 1; }
