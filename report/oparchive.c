/* oparchive: a session with its binaries.  The work is in rep_archive.c. */
#include "config.h"

#include "rep_archive.h"

int main(int argc, char **argv)
{
	return rep_archive_main(argc, argv);
}
