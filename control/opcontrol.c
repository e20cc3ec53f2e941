/* opcontrol: start, stop, dump, reset and query the domprof daemon. */
#include "config.h"

#include <stdio.h>

#include "ctl.h"
#include "util/du_log.h"

int main(int argc, char **argv)
{
	du_log_set_prog("opcontrol");
	return ctl_main(argc, argv, stdout, stderr);
}
