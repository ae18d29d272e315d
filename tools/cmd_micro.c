/*
 * cmd_micro.c — `ruma micro`: the RUMA Rewiring_Microbench driver (methods
 * 1-24, 30-32, 36-37, 40-44 and test types 1-15, 18-23 of the original, with
 * the original's command line and output): the usage text and the call of
 * the driver's parser and run (bench/micro/micro_cli.c).  docs/micro.md
 * describes methods, tests, parameters and output.
 * Syscalls: none here; bench/micro/ makes them through the rewire module.
 */
#include "bench/micro/micro.h"

#include <stdio.h>

extern char **environ;

static const char usage_text[] =
	"Usage: ruma micro <method> <test_type>[(test_parameter)] <number_of_entries> "
	"<number_of_repetitions> <detailed (true|false)> [<output_file>]\n"
	"Methods\n"
	"1. Memcpy\n"
	"2. Cow memcpy\n"
	"3. Cow memcpy using populate\n"
	"4. Cow memcpy using huge pages\n"
	"5. Cow memcpy using huge pages and populate\n"
	"6. Cow memcpy with shuffling\n"
	"7. Cow memcpy with shuffling using populate\n"
	"8. Cow memcpy with shuffling using huge pages\n"
	"9. Cow memcpy with shuffling using huge pages and populate\n"
	"10. Memcpy with shuffling\n"
	"11. Memcpy with shuffling using huge pages\n"
	"12. Traditional partitioning with histogram\n"
	"13. Mapped partitioning without histogram\n"
	"14. Mapped partitioning without histogram using huge pages\n"
	"15. Cow memcpy with shuffling using remap_file_pages\n"
	"16. Cow memcpy with shuffling using remap_file_pages and huge pages\n"
	"17. Traditional partitioning with block-chains\n"
	"18. Mapped partitioning with block-chains\n"
	"19. Mapped partitioning with block-chains using huge pages\n"
	"20. Mix huge and small pages\n"
	"21. Mapped partitioning with block-chains using adaptive block sizes\n"
	"22. Rewired vector\n"
	"23. Rewired vector using huge pages\n"
	"24. STL vector\n"
	"30. Rewired vector using prepopulation\n"
	"31. Rewired vector using huge pages and prepopulation\n"
	"32. Map and Populate\n"
	"36. Mremaped vector\n"
	"37. Mremaped vector using huge pages\n"
	"40. Allocation Rewiring (Pool)\n"
	"41. Allocation Software Indirection (Pool)\n"
	"42. Allocation Mmap\n"
	"43. Software Indirection Vector (hugepages)\n"
	"44. Mremaped partitioning using huge pages\n"
	"Test Types\n"
	"1. Read sequential x% src (x is test_parameter)\n"
	"2. Read sequential x% dst (x is test_parameter)\n"
	"3. Read x% random,uniform src (x is test_parameter).\n"
	"4. Read x% random,uniform dst (x is test_parameter).\n"
	"5. Write sequential x% src (x is test_parameter).\n"
	"6. Write sequential x% dst (x is test_parameter).\n"
	"7. Write x% random,uniform src (x is test_parameter).\n"
	"8. Write x% random,uniform dst (x is test_parameter).\n"
	"9. Read sequential all dst (two times)\n"
	"10. Read sequential all dst from several chunks\n"
	"11. Read sequential all dst and merge several chunks\n"
	"12. Radix-sort all dst\n"
	"13. Radix-sort all dst from several partitions (from consecutive memory region)\n"
	"14. Radix-sort all dst from several partitions (using an indirection)\n"
	"15. Vector insertion test\n"
	"18. Page fault test\n"
	"19. Read x% random,uniform dst (x is test_parameter) through an indirection.\n"
	"20. Write sequential all dst (two times)\n"
	"21. Read x% random,uniform dst (x is test_parameter) with dependent access.\n"
	"22. Read x% random,uniform dst (x is test_parameter) with dependent access (mixed).\n"
	"23. Read sequential x% dst (x is test_parameter) with dependent access.\n";

static const char options_text[] =
	"\nruma options (before or between the arguments):\n"
	"  --verify     check the method's result against a reference built without\n"
	"               rewiring, replay the test on it and compare totals and contents\n"
	"               (exit 1 on a mismatch; touches the data, so timings of a --verify\n"
	"               run are not comparable)\n"
	"  --fallback   huge-page methods use 4 KiB pages when too few huge pages are free\n"
	"  --hugetlb    11 and 37 map hugetlb 2 MiB pages (default, as the original: 2 MiB\n"
	"               chunks / first mapping in ordinary memory)\n"
	"  --reserve    4 and 5 reserve their 2 MiB pages when they map the source and\n"
	"               the view, so a shortage fails the mapping (default, as the\n"
	"               original: MAP_NORESERVE; a shortage during the run is SIGBUS,\n"
	"               reported and exit 1)\n"
	"  --seed N     seed of shuffles and random tests (default 42; run r uses N + r - 1)\n"
	"  --corrupt    testing aid: change one entry after the test, so --verify must fail\n"
	"  --result FILE  also write every run's phase times as rows metric,unit,value,params\n"
	"Methods take their parameters in parentheses, e.g. \"6(512)\", \"12(64,1,0)\";\n"
	"without them documented defaults apply (docs/micro.md).\n";


const char ruma_cmd_micro_summary[] =
	"RUMA micro-benchmark: rewiring methods x test types (Rewiring_Microbench)";

int ruma_cmd_micro(int argc, char **argv);

int ruma_cmd_micro(int argc, char **argv)
{
	char err[1024];
	micro_opts o;

	if (micro_parse(argc, argv, environ, &o, err, sizeof(err))) {
		for (int i = 0; i < o.progress; i++) /* the original prints them as it goes */
			fputs(i ? "Parsing test type.\n" : "Parsing copy method.\n", stdout);
		if (o.usage_stdout)
			fputs(usage_text, stdout);
		fputs(err, stderr);
		return 2;
	}
	if (o.help) {
		fputs(usage_text, stdout);
		fputs(options_text, stdout);
		return 0;
	}
	return micro_run(&o);
}
