/* The job timer's C ABI (libpipescope_timer.so; docs/timer.md, "The C ABI").
 *
 * A C interface over timer/job_timer.h for code that cannot link C++: the
 * Python module pipescope_timer (ctypes), a framework plugin, another
 * language. Every call returns a status (pipescope_timer_status); no C++
 * exception crosses it. After a failing call, pipescope_timer_last_error()
 * gives the reason as text (per thread).
 *
 * Usage:
 *
 *   pipescope_timer_options options;
 *   pipescope_timer_options_init(&options);
 *   options.path = "/logs/run42/machine0/workerlog.3.ivl";
 *   options.rank = 3;
 *   options.backend = "auto";              // CUDA when a driver and device exist, else host
 *   pipescope_timer* timer = NULL;
 *   if (pipescope_timer_open(&options, &timer) != PIPESCOPE_TIMER_OK) {
 *     const char* why;  pipescope_timer_last_error(&why, NULL);  fprintf(stderr, "%s\n", why);
 *   }
 *   uint32_t fwd;  pipescope_timer_job_type(timer, "forward", &fwd);
 *   for (each step) {
 *     for (each job) {
 *       pipescope_timer_begin(timer, fwd, micro_batch, stream);   // a cudaStream_t, or NULL
 *       launch(job, stream);
 *       pipescope_timer_end(timer, stream);
 *     }
 *     pipescope_timer_flush(timer);         // step boundary
 *   }
 *   pipescope_timer_close(timer);           // flush, close the file
 *   pipescope_timer_free(timer);
 *
 * One timer per thread (it is not thread-safe); a timer belongs to the
 * process that opened it: in a child of fork() every call on it fails with
 * PIPESCOPE_TIMER_FORKED and the child never writes into the parent's file.
 */
#ifndef PIPESCOPE_TIMER_H_
#define PIPESCOPE_TIMER_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI's version: a struct or function changes meaning only with it. */
#define PIPESCOPE_TIMER_ABI_VERSION 1

/* What a call returns. */
typedef enum pipescope_timer_status {
  PIPESCOPE_TIMER_OK = 0,
  /* A bad argument: a NULL pointer, an unknown backend, an empty or too long
   * job type name, an options struct of an unknown size. */
  PIPESCOPE_TIMER_INVALID_ARGUMENT = 1,
  /* The file cannot be created or written; pipescope_timer_last_error gives
   * the path and the errno text, and its errno. */
  PIPESCOPE_TIMER_IO_ERROR = 2,
  /* A CUDA driver call failed, or backend "cuda" was asked for where no
   * usable driver or device exists. */
  PIPESCOPE_TIMER_CUDA_ERROR = 3,
  /* The timer was closed (pipescope_timer_close); only the counters and
   * pipescope_timer_free work on it. */
  PIPESCOPE_TIMER_CLOSED = 4,
  /* Called in a child of fork() on a timer its parent opened. */
  PIPESCOPE_TIMER_FORKED = 5,
  /* Out of memory, or any other failure (the text says what). */
  PIPESCOPE_TIMER_INTERNAL_ERROR = 6
} pipescope_timer_status;

/* Which clock a timer runs on. */
typedef enum pipescope_timer_backend {
  PIPESCOPE_TIMER_BACKEND_HOST = 1, /* CLOCK_MONOTONIC on the calling thread */
  PIPESCOPE_TIMER_BACKEND_CUDA = 2  /* CUDA events on the job's stream */
} pipescope_timer_backend;

typedef struct pipescope_timer pipescope_timer; /* opaque */

typedef struct pipescope_timer_options {
  uint32_t struct_size; /* sizeof(pipescope_timer_options); set by _init */
  const char* path;     /* the .ivl file to create (truncated if it exists) */
  int32_t machine;      /* machine index and rank: where analyze places it */
  int32_t rank;
  const char* machine_name; /* for reports; NULL or "" for none */
  int64_t first_step;       /* step number of the first flush; < 0: unset (count from 0) */
  const char* backend;      /* "auto" (NULL), "host" or "cuda" */
  int32_t device;          /* CUDA: < 0 the thread's current context (else device 0), or a device */
  uint32_t marks_per_step; /* marks pre-allocated per step (the pool grows past it); 0: 512 */
  const char* producer;    /* header's producer; NULL: "pipescope job_timer" */
} pipescope_timer_options;

/* Timer figures (pipescope_timer_counters). */
typedef struct pipescope_timer_counters_t {
  uint32_t struct_size;          /* set by the caller: sizeof(pipescope_timer_counters_t) */
  int32_t backend;               /* pipescope_timer_backend */
  uint64_t jobs_recorded;        /* records written to the file so far */
  uint64_t unmatched_ends;       /* end() calls without an open job on their stream */
  uint64_t open_jobs;            /* begun, not ended */
  int64_t step;                  /* the step the next flush records */
  uint32_t streams;              /* distinct streams seen */
  int32_t closed;                /* 1 after pipescope_timer_close */
  int64_t anchor_uncertainty_ns; /* half-width of the latest clock anchor */
} pipescope_timer_counters_t;

/* Fills defaults: struct_size, backend "auto", device -1, first_step -1,
 * everything else 0/NULL. */
int pipescope_timer_options_init(pipescope_timer_options* options);

/* Creates options->path, writes its header and returns the timer in *timer.
 * Backend "auto" takes CUDA when the driver (libcuda.so.1) loads and has a
 * device, else the host clock, and says why in pipescope_timer_backend_note.
 * Errors: INVALID_ARGUMENT, IO_ERROR (path and errno text), CUDA_ERROR
 * (backend "cuda" without a usable driver). */
int pipescope_timer_open(const pipescope_timer_options* options, pipescope_timer** timer);

/* The id of a job type in *id (interned: call once per type). */
int pipescope_timer_job_type(pipescope_timer* timer, const char* name, uint32_t* id);

/* Starts a job of `type` (an id from job_type) on `stream` (a cudaStream_t /
 * CUstream for CUDA, NULL for the legacy default stream; any distinct key on
 * the host backend). Jobs on one stream nest. Never waits for the device. */
int pipescope_timer_begin(pipescope_timer* timer, uint32_t type, int32_t micro_batch, void* stream);

/* Ends the latest open job on `stream`; an end without one is counted
 * (unmatched_ends) and returns OK. Never waits for the device. */
int pipescope_timer_end(pipescope_timer* timer, void* stream);

/* Step boundary: waits for this step's marks, writes the finished jobs as
 * one block of the current step, advances the step. */
int pipescope_timer_flush(pipescope_timer* timer);

/* Flushes and closes the file. Closing a closed timer is OK. */
int pipescope_timer_close(pipescope_timer* timer);

/* Closes the timer if it is open and frees it; NULL is OK. The status is the
 * close's: the timer is freed either way. In a child of fork() the parent's
 * timer is released without touching its file (FORKED). */
int pipescope_timer_free(pipescope_timer* timer);

/* The timer's figures; counters->struct_size must be set by the caller. */
int pipescope_timer_counters(const pipescope_timer* timer, pipescope_timer_counters_t* counters);

/* Why "auto" chose its backend ("" when asked for explicitly), in *note;
 * valid until the timer is freed. */
int pipescope_timer_backend_note(const pipescope_timer* timer, const char** note);

/* The last failing call's reason on this thread in *message ("" if none;
 * valid until the next call on this thread), and its errno in *os_errno
 * (0 unless an I/O error; os_errno may be NULL). */
int pipescope_timer_last_error(const char** message, int* os_errno);

/* Whether backend "cuda" would work here: *available 1 or 0, and the reason
 * when 0 in *why (valid until the next call on this thread; may be NULL). */
int pipescope_timer_cuda_available(int* available, const char** why);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCOPE_TIMER_H_ */
