#include "config.h"

#include "opd_main.h"

int main(int argc, char **argv)
{
	return opd_main(argc, argv);
}
