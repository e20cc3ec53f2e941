/* oppprof: a session as a pprof profile.  The work is in rep_pprof.c. */
#include "config.h"

#include "rep_pprof.h"

int main(int argc, char **argv)
{
	return rep_pprof_main(argc, argv);
}
