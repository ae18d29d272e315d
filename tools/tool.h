/*
 * tool.h — helpers shared by the `ruma` subcommands (tools/cmd_*.c), defined
 * in tools/ruma.c.  Not part of the library.
 */
#ifndef RUMA_TOOL_H
#define RUMA_TOOL_H

#include <stdio.h>

/*
 * ruma_tool_close_output — finish a results stream: flush it, and close it
 * unless it is stdout.  Any write error seen on the stream, including one an
 * earlier fflush met and stdio then forgot (glibc's fclose succeeds after a
 * failed fflush emptied the buffer), is reported on stderr as
 * "ruma <cmd>: cannot write <what>: <reason>" and returns -EIO (or -errno).
 * Returns 0 when everything written reached the file.
 */
int ruma_tool_close_output(FILE *f, const char *cmd, const char *what);

#endif
