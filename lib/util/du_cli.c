#include "config.h"

#include "du_cli.h"

void du_cli_version(FILE *f, const char *prog)
{
	fprintf(f, "%s (%s) %s\n", prog, PACKAGE_NAME, PACKAGE_VERSION);
}

void du_cli_usage_error(FILE *f, const char *prog, const char *msg)
{
	fprintf(f, "%s: %s\nTry '%s --help' for more information.\n", prog, msg, prog);
}
