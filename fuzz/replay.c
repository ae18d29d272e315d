/*
 * replay.c — a main() for a fuzz harness built without libFuzzer: it runs
 * LLVMFuzzerTestOneInput once on each file named on the command line (a
 * folder stands for the files in it, in name order), so ctest replays the
 * reproducers of fixed bugs (fuzz/crashes/<harness>/) and a corpus sample in
 * the normal and sanitizer builds, and a bug that comes back fails the test.
 *
 * A harness reports a failed check by abort() (or a sanitizer report), which
 * ends the process with a signal: ctest counts it as a failure.  The file
 * being replayed is named on stderr first, so the log says which one it was.
 * LLVMFuzzerInitialize is called when the harness defines it, as libFuzzer
 * does.  Exit status: 0 when every input ran, 1 when a file could not be
 * read, 2 when no input was named.
 *
 * Plain file I/O only (opendir/fopen): this is test tooling, not library
 * code.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Read all of path into a fresh buffer (*len bytes); NULL on error. */
static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;
	int ok = f != NULL;

	while (ok) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? 2 * cap : 4096);
			if (!nb) {
				ok = 0;
				break;
			}
			buf = nb;
			cap = cap ? 2 * cap : 4096;
		}
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			ok = !ferror(f);
			break;
		}
	}
	if (f)
		fclose(f);
	if (!ok) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int replay_file(const char *path)
{
	size_t len = 0;
	uint8_t *data = slurp(path, &len);

	if (!data) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		return 1;
	}
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	LLVMFuzzerTestOneInput(data, len);
	free(data);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replay the regular files of folder dir in name order; count them in *ran. */
static int replay_dir(const char *dir, long *ran)
{
	DIR *d = opendir(dir);
	char **names = NULL;
	size_t n = 0, cap = 0;
	int bad = 0;

	if (!d) {
		fprintf(stderr, "replay: cannot open %s\n", dir);
		return 1;
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			char **nn = realloc(names, cap * sizeof(*names));
			if (!nn) {
				bad = 1;
				break;
			}
			names = nn;
		}
		size_t len = strlen(dir) + strlen(e->d_name) + 2;
		if (!(names[n] = malloc(len))) {
			bad = 1;
			break;
		}
		snprintf(names[n++], len, "%s/%s", dir, e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		bad |= replay_file(names[i]);
		(*ran)++;
		free(names[i]);
	}
	free(names);
	if (bad)
		fprintf(stderr, "replay: could not list all of %s\n", dir);
	return bad;
}

int main(int argc, char **argv)
{
	long ran = 0;
	int bad = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|FOLDER...  (run the harness on each input)\n",
			argv[0]);
		return 2;
	}
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			bad |= replay_dir(argv[i], &ran);
		} else {
			bad |= replay_file(argv[i]);
			ran++;
		}
	}
	fprintf(stderr, "replay: %ld input(s)%s\n", ran, bad ? ", some unreadable" : "");
	return bad ? 1 : 0;
}
