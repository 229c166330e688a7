/* A C program of the job timer's C ABI, built with `pkg-config --cflags
 * --libs pipescope_timer` against an installed prefix (check_install.sh) or
 * package (tests/package/check_deb.sh): records one host job into argv[1]. */
#include <pipescope_timer.h>
#include <stdio.h>
int main(int argc, char** argv) {
  if (argc != 2) return 2;
  pipescope_timer_options o;
  pipescope_timer_options_init(&o);
  o.path = argv[1];
  o.backend = "host";
  pipescope_timer* t = NULL;
  uint32_t fwd = 0;
  if (pipescope_timer_open(&o, &t) || pipescope_timer_job_type(t, "forward", &fwd) ||
      pipescope_timer_begin(t, fwd, 0, NULL) || pipescope_timer_end(t, NULL) ||
      pipescope_timer_free(t)) {
    const char* why;
    pipescope_timer_last_error(&why, NULL);
    fprintf(stderr, "%s\n", why);
    return 1;
  }
  return 0;
}
