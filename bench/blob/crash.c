/*
 * crash.c — `ruma blob --mode crash` (blob.h): the store killed and
 * power-lost while it puts, streams, overwrites and deletes objects, and
 * checked after every round.
 *
 * One store lives through all rounds.  In each round a child process
 * (fork) opens it and does operations on ids 0 .. --churn-keys - 1 of
 * log-uniform sizes in [--min-size, --max-size]: a put (whole, or where
 * the system has one streamed in pieces of random size) for an id without
 * an object; for one with an object a delete, an append of its own stream
 * (where the system can) or a new version put whole or streamed; each a
 * committed transaction.  With --batch N, one operation in 8 is instead a
 * transaction over up to N distinct ids: small puts (at most 1000 bytes,
 * inline in ruma's store) and deletes of present objects.  Before each operation the child appends "B" and
 * the operation to a side record (a file outside the store, written with
 * write(2): a killed process's writes stay in the page cache, and the
 * simulated power loss does not track the file), after its commit
 * returned "C"; after a simulated power loss it records nothing more.
 * --kills rounds end with SIGKILL at a random instant of
 * [--max-run / 10, --max-run] ms; --powerloss rounds with the simulated
 * power loss (core_ext.h: every write no completed sync covered undone;
 * every other one tears the unsynced 4 KiB writes).
 *
 * After each round the parent reads the side record into its model and
 * reopens the store: every id whose last operation committed holds exactly
 * that version (every byte compared, content checksum of the header's
 * version); the one transaction in flight may be there or not, but whole
 * (all its objects or none); no id holds anything else; the store's check (ruma_db_check: every page and
 * extent accounted for, none leaked or shared) passes.  The side record is
 * then emptied and the next round starts from the model.
 *
 * Syscalls: fork, kill, waitpid, nanosleep, open/write/ftruncate/close of
 * the side record, pthread_create (the child's power-loss timer).
 */
#include "bench/blob/run.h"

#include "core/core_ext.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define POWERLOSS_STATUS 86

/* What an id holds, or what the operation in flight would leave there. */
struct obj {
	uint64_t version, size; /* version 0: no object */
};

/* One object of the transaction in flight: its id and what it would hold. */
struct pend {
	uint64_t id;
	struct obj o;
};

struct crash {
	ruma_blob_ctx *ctx;
	const ruma_blob_system *sys;
	struct obj *model;      /* committed state per id */
	struct pend *pend;      /* the transaction in flight at the crash (--churn-keys room) */
	size_t npend;
	bool open;              /* the side record's last line began a transaction */
	uint64_t group_adopted; /* objects of pend found in their new state */
	char dir[4200], record[4300];
	uint64_t round;
	/* the child's power loss */
	uint64_t loss_ms;
	bool torn;
	/* totals */
	uint64_t ops, checked, adopted;
};

static void sleep_ms(uint64_t ms)
{
	struct timespec t = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&t, &t) && errno == EINTR)
		;
}

/* ---- the child --------------------------------------------------------------- */

static void child_fail(const char *what, const char *why)
{
	if (ruma_powerloss_dead())
		for (;;)
			sleep_ms(1000); /* the power-loss thread ends the process */
	fprintf(stderr, "ruma blob: crash child: %s: %s\n", what, why);
	_exit(1);
}

static void *loss_main(void *arg)
{
	struct crash *c = arg;
	sleep_ms(c->loss_ms);
	(void)ruma_powerloss_now(c->torn, NULL);
	_exit(POWERLOSS_STATUS);
}

/* One line of the side record.  After the simulated power loss nothing
 * more is recorded: a commit returning then was not durable on the
 * simulated machine, and an operation begun then is none the store saw. */
static void record(int fd, char kind, char op, uint64_t id, const struct obj *o)
{
	char line[96];
	if (ruma_powerloss_dead())
		return;
	int n = snprintf(line, sizeof(line), "%c %c %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", kind,
			 op, id, o->version, o->size);
	if (write(fd, line, (size_t)n) != n)
		child_fail("side record", strerror(errno));
}

/* The child's state. */
struct child {
	struct crash *c;
	ruma_blob_thread *th;
	ruma_rng rng;
	int fd;
	unsigned char *buf;
	size_t cap;
	/* --batch: a permutation of the ids, and one transaction's objects */
	uint64_t *perm, *ids;
	const void **data;
	size_t *lens;
};

static int child_buf(struct child *k, uint64_t len)
{
	if (len <= k->cap)
		return 0;
	unsigned char *b = realloc(k->buf, (size_t)len);
	if (!b)
		return ruma_blob_fail(k->th, -ENOMEM, "out of memory");
	k->buf = b;
	k->cap = (size_t)len;
	return 0;
}

static uint64_t child_size(struct child *k, uint64_t lo, uint64_t hi)
{
	double l = log((double)lo) + ruma_rng_double(&k->rng) * (log((double)hi) - log((double)lo));
	uint64_t v = (uint64_t)llround(exp(l));
	return v < lo ? lo : v > hi ? hi : v;
}

static int child_del(struct child *k, uint64_t id)
{
	struct obj none = { 0, 0 };
	record(k->fd, 'B', 'D', id, &none);
	int rc = k->c->sys->del(k->th, id);
	if (!rc)
		record(k->fd, 'C', 'D', id, &none);
	k->c->model[id] = none;
	return rc;
}

/* Bytes [from, to) of the object's stream appended to it. */
static int child_append(struct child *k, uint64_t id)
{
	struct obj n = k->c->model[id];
	uint64_t from = n.size;
	n.size = from + child_size(k, 1, from < k->c->ctx->o->max_size
					     ? k->c->ctx->o->max_size - from : 1);
	int rc = child_buf(k, n.size - from);
	if (rc)
		return rc;
	ruma_blob_fill_range(k->buf, from, (size_t)(n.size - from), id, n.version);
	record(k->fd, 'B', 'A', id, &n);
	rc = k->c->sys->append(k->th, id, k->buf, (size_t)(n.size - from));
	if (!rc)
		record(k->fd, 'C', 'A', id, &n);
	k->c->model[id] = n;
	return rc;
}

/* A new version of the object, put whole or streamed in pieces. */
static int child_put(struct child *k, uint64_t id, bool stream, uint64_t seq)
{
	const ruma_blob_opts *o = k->c->ctx->o;
	struct obj n = { (k->c->round << 32) | (seq << 12), child_size(k, o->min_size, o->max_size) };
	int rc = child_buf(k, n.size);
	if (rc)
		return rc;
	ruma_blob_fill(k->buf, (size_t)n.size, id, n.version);
	record(k->fd, 'B', stream ? 'S' : 'P', id, &n);
	size_t piece = 1 + (size_t)ruma_rng_below(&k->rng, n.size);
	rc = stream ? k->c->sys->put_stream(k->th, id, k->buf, (size_t)n.size, piece)
		    : k->c->sys->put(k->th, id, k->buf, (size_t)n.size);
	if (!rc)
		record(k->fd, 'C', stream ? 'S' : 'P', id, &n);
	k->c->model[id] = n;
	return rc;
}

/* n distinct ids, drawn without replacement (k->perm holds a permutation of the ids). */
static void child_ids(struct child *k, size_t n, uint64_t *ids)
{
	uint64_t keys = k->c->ctx->o->churn_keys;
	for (size_t i = 0; i < n; i++) {
		uint64_t j = i + ruma_rng_below(&k->rng, keys - i), v = k->perm[j];
		k->perm[j] = k->perm[i];
		k->perm[i] = v;
		ids[i] = v;
	}
}

/* One transaction over up to --batch objects: small puts (inline in the
 * store: up to 1000 bytes) and deletes of present objects. */
static int child_batch(struct child *k, uint64_t seq)
{
	const ruma_blob_opts *o = k->c->ctx->o;
	size_t n = 1 + (size_t)ruma_rng_below(&k->rng, o->batch), at = 0;
	n = n < o->churn_keys ? n : (size_t)o->churn_keys;
	uint64_t hi = o->max_size < 1000 ? o->max_size : 1000, lo = o->min_size < hi ? o->min_size : hi;
	int rc = child_buf(k, n * hi);
	if (rc)
		return rc;
	child_ids(k, n, k->ids);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = k->ids[i];
		bool del = k->c->model[id].version && ruma_rng_below(&k->rng, 2);
		struct obj nw = { del ? 0 : (k->c->round << 32) | (seq << 12) | i,
				  del ? 0 : child_size(k, lo, hi) };
		k->data[i] = del ? NULL : k->buf + at;
		k->lens[i] = (size_t)nw.size;
		if (!del)
			ruma_blob_fill(k->buf + at, (size_t)nw.size, id, nw.version);
		at += (size_t)nw.size;
		record(k->fd, 'B', 'M', id, &nw);
		k->c->model[id] = nw;
	}
	rc = k->c->sys->batch(k->th, n, k->ids, (const void *const *)k->data, k->lens);
	struct obj count = { 0, 0 };
	if (!rc)
		record(k->fd, 'C', 'M', n, &count);
	return rc;
}

/* One operation of the child; 0 or the system's code. */
static int child_op(struct child *k, uint64_t seq)
{
	const ruma_blob_system *sys = k->c->sys;
	if (k->c->ctx->o->batch && ruma_rng_below(&k->rng, 8) == 0)
		return child_batch(k, seq);
	uint64_t id = ruma_rng_below(&k->rng, k->c->ctx->o->churn_keys);
	unsigned pick = (unsigned)ruma_rng_below(&k->rng, 4);
	bool present = k->c->model[id].version != 0;
	if (present && pick == 0)
		return child_del(k, id);
	if (present && pick == 1 && sys->append)
		return child_append(k, id);
	return child_put(k, id, pick >= 2 && sys->put_stream, seq);
}

/* The arrays of --batch transactions; exits on failure. */
static void child_batch_init(struct child *k)
{
	const ruma_blob_opts *o = k->c->ctx->o;
	if (!o->batch)
		return;
	size_t n = o->batch < o->churn_keys ? o->batch : (size_t)o->churn_keys;
	k->perm = malloc(o->churn_keys * sizeof(*k->perm));
	k->ids = malloc(n * sizeof(*k->ids));
	k->data = malloc(n * sizeof(*k->data));
	k->lens = malloc(n * sizeof(*k->lens));
	if (!k->perm || !k->ids || !k->data || !k->lens)
		child_fail("batch", "out of memory");
	for (uint64_t i = 0; i < o->churn_keys; i++)
		k->perm[i] = i;
}

static void child_main(struct crash *c, bool loss, uint64_t seed)
{
	char err[512];
	void *store;
	struct child k = { .c = c };
	pthread_t pt;
	k.fd = open(c->record, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (k.fd < 0)
		child_fail(c->record, strerror(errno));
	if (loss && (ruma_powerloss_arm() || pthread_create(&pt, NULL, loss_main, c)))
		child_fail("power loss", "cannot arm it");
	ruma_blob_conf conf = { .dir = c->dir, .memory = c->ctx->o->memory, .sync = true,
				.powerloss = loss };
	if (c->sys->open(&conf, &store, err, sizeof(err)))
		child_fail("open", err);
	if (c->sys->thread_open(store, &k.th, err, sizeof(err)))
		child_fail("thread", err);
	ruma_rng_seed(&k.rng, seed);
	child_batch_init(&k);
	for (uint64_t seq = 1;; seq++) {
		if (ruma_powerloss_dead())
			child_fail("power lost", "waiting for the end"); /* sleeps until _exit */
		int rc = child_op(&k, seq);
		if (rc)
			child_fail("operation", k.th->err[0] ? k.th->err : ruma_strerror(rc));
	}
}

/* ---- the parent ---------------------------------------------------------------- */

/* Fold the side record into the model; the operation in flight into pending. */
static int read_record(struct crash *c)
{
	FILE *f = fopen(c->record, "re");
	char line[128], kind, op;
	uint64_t id;
	struct obj o;
	if (!f) {
		fprintf(stderr, "ruma blob: crash: %s: %s\n", c->record, strerror(errno));
		return 1;
	}
	c->npend = 0;
	c->open = false;
	while (fgets(line, sizeof(line), f)) {
		if (!strchr(line, '\n') ||
		    sscanf(line, "%c %c %" SCNu64 " %" SCNu64 " %" SCNu64, &kind, &op, &id,
			   &o.version, &o.size) != 5)
			continue; /* a line the kill cut */
		if (kind == 'C' && op == 'M') { /* the transaction of the B lines before */
			for (size_t i = 0; i < c->npend; i++)
				c->model[c->pend[i].id] = c->pend[i].o;
			c->npend = 0;
			c->open = false;
			c->ops++;
			continue;
		}
		if (id >= c->ctx->o->churn_keys)
			continue;
		if (kind == 'B') {
			if (!c->open)
				c->npend = 0;
			c->open = true;
			if (c->npend < c->ctx->o->churn_keys)
				c->pend[c->npend++] = (struct pend){ id, o };
		} else {
			c->model[id] = o;
			c->npend = 0;
			c->open = false;
			c->ops++;
		}
	}
	fclose(f);
	return 0;
}

/* What the transaction in flight would leave at id, or NULL. */
static const struct obj *in_flight(const struct crash *c, uint64_t id)
{
	for (size_t i = 0; i < c->npend; i++)
		if (c->pend[i].id == id)
			return &c->pend[i].o;
	return NULL;
}

/* Object id as found against the model; 0 or 1 with the reason on stderr. */
static int check_one(struct crash *c, ruma_blob_thread *th, uint64_t id)
{
	const void *data;
	size_t len;
	uint64_t version = 0;
	char why[320];
	const struct obj *pend = in_flight(c, id);
	int rc = c->sys->get(th, id, &data, &len);
	if (rc && rc != RUMA_ENOTFOUND) {
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": get %" PRIu64 ": %s (committed: "
			"version %" PRIu64 " of %" PRIu64 " bytes%s)\n", c->round, id, th->err,
			c->model[id].version, c->model[id].size,
			pend ? "; an operation on it was in flight" : "");
		return 1;
	}
	if (!rc && ruma_blob_verify(data, len, id, true, &version, why, sizeof(why))) {
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": %s\n", c->round, why);
		return 1;
	}
	struct obj found = { rc ? 0 : version, rc ? 0 : len };
	struct obj *want = &c->model[id];
	if (found.version == want->version && found.size == want->size)
		return 0;
	if (pend && found.version == pend->version && found.size == pend->size) {
		*want = found; /* the operation in flight was durable */
		c->group_adopted++;
		return 0;
	}
	fprintf(stderr, "ruma blob: crash round %" PRIu64 ": object %" PRIu64 " holds version %"
		PRIu64 " of %" PRIu64 " bytes; committed: version %" PRIu64 " of %" PRIu64
		" bytes%s\n", c->round, id, found.version, found.size, want->version, want->size,
		pend ? " (or the one in flight)" : "");
	return 1;
}

/* The transaction in flight is there whole or not at all; 0 or 1. */
static int check_atomic(struct crash *c)
{
	if (c->group_adopted)
		c->adopted++;
	if (!c->group_adopted || c->group_adopted == c->npend)
		return 0;
	fprintf(stderr, "ruma blob: crash round %" PRIu64 ": %" PRIu64 " of the %zu objects of the "
		"transaction in flight hold its new state, the others their committed one\n",
		c->round, c->group_adopted, c->npend);
	return 1;
}

/* Reopen the store and check every id and the store; 0 or 1. */
static int verify(struct crash *c)
{
	char err[512];
	void *store;
	ruma_blob_thread *th = NULL;
	ruma_blob_conf conf = { .dir = c->dir, .memory = c->ctx->o->memory, .sync = true };
	if (c->sys->open(&conf, &store, err, sizeof(err))) {
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": reopen: %s\n", c->round, err);
		return 1;
	}
	int st = c->sys->thread_open(store, &th, err, sizeof(err)) ? 1 : 0;
	if (st)
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": %s\n", c->round, err);
	c->group_adopted = 0;
	for (uint64_t id = 0; !st && id < c->ctx->o->churn_keys; id++, c->checked++)
		st = check_one(c, th, id);
	if (!st)
		st = check_atomic(c);
	if (th)
		c->sys->thread_close(th);
	if (!st && c->sys->check(store, err, sizeof(err))) {
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": %s\n", c->round, err);
		st = 1;
	}
	if (c->sys->close(store, err, sizeof(err)) && !st) {
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": close: %s\n", c->round, err);
		st = 1;
	}
	return st;
}

/* One round: the child until the kill or the power loss; 0 or 1. */
static int one_round(struct crash *c, bool loss, ruma_rng *rng)
{
	const ruma_blob_opts *o = c->ctx->o;
	uint64_t ms = o->max_run_ms / 10 + ruma_rng_below(rng, o->max_run_ms - o->max_run_ms / 10);
	uint64_t seed = ruma_rng_next(rng);
	c->loss_ms = ms;
	c->torn = loss && (c->round & 1);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "ruma blob: crash: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0)
		child_main(c, loss, seed);
	if (!loss) {
		sleep_ms(ms);
		kill(pid, SIGKILL);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	bool ended = loss ? WIFEXITED(ws) && WEXITSTATUS(ws) == POWERLOSS_STATUS
			  : WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL;
	if (!ended) {
		fprintf(stderr, "ruma blob: crash round %" PRIu64 ": the child ended on its own "
			"(status %d)\n", c->round, ws);
		return 1;
	}
	if (read_record(c))
		return 1;
	if (!verify(c))
		return 0;
	fprintf(stderr, "ruma blob: crash round %" PRIu64 " ended by %s after %" PRIu64 " ms; the "
		"store and its side record are kept in %s\n", c->round,
		loss ? (c->torn ? "a power loss tearing unsynced writes" : "a power loss")
		     : "SIGKILL", ms, c->ctx->base);
	c->ctx->keep = true;
	return 1;
}

/* The store made once (so that no round kills its creation), the side record emptied. */
static int prepare(struct crash *c)
{
	void *store;
	char path[4200];
	int st = ruma_blob_store_fresh(c->ctx, "crash", &store, c->dir, sizeof(c->dir));
	if (st || (st = ruma_blob_store_close(c->ctx, store)))
		return st;
	snprintf(path, sizeof(path), "%s/crash.record", c->ctx->base);
	snprintf(c->record, sizeof(c->record), "%s", path);
	return 0;
}

static int empty_record(struct crash *c)
{
	int fd = open(c->record, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "ruma blob: crash: %s: %s\n", c->record, strerror(errno));
		return 1;
	}
	close(fd);
	return 0;
}

static void summary(struct crash *c)
{
	const ruma_blob_opts *o = c->ctx->o;
	fprintf(stderr, "ruma blob: crash: %u kills and %u power losses survived: %" PRIu64
		" committed operations, %" PRIu64 " objects checked byte for byte, %" PRIu64
		" operations in flight found durable, store check passed every round\n", o->kills,
		o->powerloss, c->ops, c->checked, c->adopted);
	ruma_result *r = c->ctx->res;
	ruma_result_set(r, "op", "crash");
	ruma_result_add(r, "rounds", "rounds", (double)(o->kills + o->powerloss));
	ruma_result_add(r, "committed", "ops", (double)c->ops);
	ruma_result_add(r, "checked", "objects", (double)c->checked);
	ruma_result_add(r, "adopted", "ops", (double)c->adopted);
}

/* Round i of kills + losses is a power loss: the losses spread evenly among the kills. */
static bool is_loss(uint64_t i, uint64_t kills, uint64_t losses)
{
	uint64_t n = kills + losses;
	return (i + 1) * losses / n > i * losses / n;
}

int ruma_blob_crash(ruma_blob_ctx *ctx)
{
	const ruma_blob_opts *o = ctx->o;
	struct crash c = { .ctx = ctx, .sys = o->sys };
	ruma_rng rng;
	c.model = calloc(o->churn_keys, sizeof(*c.model));
	c.pend = calloc(o->churn_keys, sizeof(*c.pend));
	if (!c.model || !c.pend) {
		free(c.model);
		free(c.pend);
		fprintf(stderr, "ruma blob: out of memory\n");
		return 1;
	}
	ruma_rng_seed(&rng, o->seed);
	int st = prepare(&c);
	for (unsigned i = 0; !st && i < o->kills + o->powerloss; i++) {
		c.round = i + 1;
		st = empty_record(&c) || one_round(&c, is_loss(i, o->kills, o->powerloss), &rng);
	}
	if (!st)
		summary(&c);
	free(c.model);
	free(c.pend);
	return st;
}
