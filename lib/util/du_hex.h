/* Hex digits, for parsers of text that comes from outside. */
#ifndef DU_HEX_H
#define DU_HEX_H

/* The value of hex digit @ch (either case), or -1 if it is not one. */
static inline int du_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

#endif
