# Runs `octet bench` (cmake -DLAUNCHER=mpirun|-np|3 -DOCTET=octet -DARGS=allreduce|-b|4 -DJSON=out.json
# [-DEXPECT=regex] -P run_bench.cmake; lists separated by |).
#  - without EXPECT: the run must succeed, name the codec's SIMD target in its header and JSON, and
#    every row of its JSON must have #wrong 0 for Octet
#    and the fp32 baseline, and identical results on every rank,
#    and no two rows of the same size;
#    [-DCALLS=n: every row timed n calls per side; -DCALLS_ABOVE=n: more than n]
#  - with EXPECT: the run must fail, printing exactly one error line ("octet: error ..." or a
#    command-line error "--option: ..."), which matches EXPECT.
string(REPLACE "|" ";" launcher "${LAUNCHER}")
string(REPLACE "|" ";" args "${ARGS}")
if(NOT EXPECT)
  list(APPEND args --json ${JSON})
  file(REMOVE ${JSON})
endif()
execute_process(COMMAND ${launcher} ${OCTET} bench ${args} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")

if(EXPECT)
  string(REPLACE ";" "," err "${err}")  # a list of lines below
  string(REGEX MATCHALL "(octet: error|--[a-z-]+: )[^\n]*" lines "${err}")
  list(LENGTH lines n)
  if(rc EQUAL 0 OR NOT n EQUAL 1 OR NOT lines MATCHES "${EXPECT}")
    message(FATAL_ERROR "expected a failure with one error line matching '${EXPECT}'; "
                        "exit ${rc}, ${n} error line(s)")
  endif()
  return()
endif()

if(NOT rc EQUAL 0)
  message(FATAL_ERROR "octet bench failed (exit ${rc})")
endif()
file(READ ${JSON} doc)
string(JSON target GET "${doc}" simd_target)
if(target STREQUAL "" OR NOT out MATCHES "codec ${target} \\(rank 0's SIMD target\\)")
  message(FATAL_ERROR "the header and the JSON must name the codec's SIMD target ('${target}')")
endif()
string(JSON rows LENGTH "${doc}" rows)
if(rows EQUAL 0)
  message(FATAL_ERROR "no rows")
endif()
math(EXPR last "${rows} - 1")
set(previous "")
foreach(i RANGE ${last})
  string(JSON bytes GET "${doc}" rows ${i} bytes)
  if(bytes STREQUAL previous)
    message(FATAL_ERROR "two rows of ${bytes} bytes")
  endif()
  set(previous ${bytes})
  string(JSON calls GET "${doc}" rows ${i} calls)
  if((CALLS AND NOT calls EQUAL CALLS) OR (CALLS_ABOVE AND NOT calls GREATER CALLS_ABOVE))
    message(FATAL_ERROR "row of ${bytes} bytes timed ${calls} calls (CALLS '${CALLS}', "
                        "CALLS_ABOVE '${CALLS_ABOVE}')")
  endif()
  foreach(side "error" "baseline;error")
    string(JSON wrong GET "${doc}" rows ${i} ${side} wrong)
    string(JSON identical GET "${doc}" rows ${i} ${side} identical)
    if(NOT wrong EQUAL 0 OR NOT identical)
      message(FATAL_ERROR "row of ${bytes} bytes, ${side}: ${wrong} wrong, identical ${identical}")
    endif()
  endforeach()
endforeach()
# BREAK_EVEN: the JSON's break-even size, "none" for null (no row from which on every row is
# compressed).
if(BREAK_EVEN)
  string(JSON type TYPE "${doc}" break_even_bytes)
  if(type STREQUAL "NULL")
    set(break_even none)
  else()
    string(JSON break_even GET "${doc}" break_even_bytes)
  endif()
  if(NOT break_even STREQUAL BREAK_EVEN)
    message(FATAL_ERROR "break_even_bytes ${break_even}, want ${BREAK_EVEN}")
  endif()
endif()
message(STATUS "${rows} rows within the bound")
