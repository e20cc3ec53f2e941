/* opreport: report a domprof session.  The work is in librep (rep_*.c). */
#include "config.h"

#include "rep_main.h"

int main(int argc, char **argv)
{
	return rep_main(argc, argv);
}
