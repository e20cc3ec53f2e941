/* opflame: a session as a flame graph.  The work is in librep (rep_flame.c). */
#include "config.h"

#include "rep_flame.h"

int main(int argc, char **argv)
{
	return rep_flame_main(argc, argv);
}
