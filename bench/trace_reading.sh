# The measuring loop of bench/trace_json.sh and bench/kernel_trace.sh, sourced
# by both: for each size, make_trace (the caller's) writes the trace, then, on
# the same file from the page cache, `pipescope analyze --no-trace -q` is timed
# (wall and CPU, GB/s, peak RssAnon by bench/peak_memory.sh) and so is Python's
# json.load of it (skipped above PYTHON_MAX_MIB: it needs ~8x the file in
# memory), with the ratio; one row per size.
#
#   measure_trace_reading COLUMN SUMMARY_KEY [ANALYZE_ARG...]
#
# COLUMN names the count printed (jobs, kernels), SUMMARY_KEY is where
# summary.json holds it (a Python subscript: ['jobs'] or
# ['kernel_view']['gpu_activities']). Needs $here, $pipescope, $work, the
# array sizes and the function make_trace MIB FILE.

measure_trace_reading() {
  local column=$1 key=$2
  shift 2
  local python_max=${PYTHON_MAX_MIB:-1024}
  # Wall and CPU (user + sys) seconds: on a shared machine the CPU time is the steadier figure.
  printf '%-6s %-22s %-9s %-9s %-22s %-14s %s\n' "MiB" "pipescope wall/cpu" "GB/s" "$column" \
    "json.load wall/cpu" "ratio wall/cpu" "peak RssAnon"
  local mib trace bytes ps_wall ps_user ps_sys ps_cpu mem count anon gbs py ratio
  local py_wall py_user py_sys py_cpu
  for mib in "${sizes[@]}"; do
    trace=$work/big.pt.trace.json
    make_trace "$mib" "$trace"
    bytes=$(stat -c %s "$trace")
    cat "$trace" > /dev/null  # both readers start from the page cache
    local args=(analyze "$trace" -o "$work/out" -q --no-trace "$@")
    /usr/bin/time -f "%e %U %S" -o "$work/ps.time" "$pipescope" "${args[@]}" 2> /dev/null
    read -r ps_wall ps_user ps_sys < "$work/ps.time"
    ps_cpu=$(python3 -c "print(f'{$ps_user + $ps_sys:.2f}')")
    mem=$(bash "$here/bench/peak_memory.sh" "$work/out" "$pipescope" "${args[@]}" 2> /dev/null)
    count=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$key)" \
      "$work/out/summary.json")
    anon=$(grep -o 'peak RssAnon [0-9.]* MiB' <<< "$mem" | grep -o '[0-9.]* MiB')
    gbs=$(python3 -c "print(f'{$bytes / $ps_wall / 1e9:.2f}')")
    if [ "$mib" -le "$python_max" ]; then
      /usr/bin/time -f "%e %U %S" -o "$work/py.time" \
        python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$trace"
      read -r py_wall py_user py_sys < "$work/py.time"
      py_cpu=$(python3 -c "print(f'{$py_user + $py_sys:.2f}')")
      py="${py_wall}/${py_cpu}s"
      ratio=$(python3 -c "print(f'{$py_wall / $ps_wall:.1f}x/{$py_cpu / $ps_cpu:.1f}x')")
    else
      py="-"
      ratio="-"
    fi
    printf '%-6s %-22s %-9s %-9s %-22s %-14s %s\n' "$mib" "${ps_wall}/${ps_cpu}s" "$gbs" \
      "$count" "$py" "$ratio" "$anon"
    rm -f "$trace"
  done
}
