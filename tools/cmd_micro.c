/*
 * cmd_micro.c — `ruma micro`: the RUMA Rewiring_Microbench driver (methods
 * 1-24, 30-32, 36-37, 40-44 and test types 1-15, 18-23 of the original, with
 * the original's command line and output).  The driver lives in bench/micro/;
 * docs/micro.md describes methods, tests, parameters and output.
 * Syscalls: none here; bench/micro/ makes them through the rewire module.
 */
#include "bench/micro/micro.h"

const char ruma_cmd_micro_summary[] =
	"RUMA micro-benchmark: rewiring methods x test types (Rewiring_Microbench)";

int ruma_cmd_micro(int argc, char **argv);

int ruma_cmd_micro(int argc, char **argv)
{
	return micro_main(argc, argv);
}
