/* opannotate: samples on instructions and source lines.  The work is in
 * librep (rep_annotate.c). */
#include "config.h"

#include "rep_annotate.h"

int main(int argc, char **argv)
{
	return rep_annotate_main(argc, argv);
}
