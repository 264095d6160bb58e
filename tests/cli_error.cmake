# A command line that must fail cleanly: a non-zero exit status (not a signal) and exactly one line
# on stderr, matching a regex, besides CLI11's "Run with --help for more information." hint.
#
# As a script (octet_cli_error_test in tests/CMakeLists.txt):
#   cmake -DOCTET=octet -DARGS=a|b|c -DEXPECT=regex [-DSOURCE=file -DFIND=text -DREPLACE=text
#         -DINPUT=file] [-DABSENT=file] -P cli_error.cmake
# With SOURCE, INPUT is first written as SOURCE with FIND (which must occur) replaced by REPLACE: a
# bad variant of a good file. With ABSENT, that file must not exist afterwards (no partial output).
# Included by other scripts, it defines expect_cli_error() only.

# expect_cli_error(<regex> <absent file or ""> <command...>)
function(expect_cli_error expect absent)
  if(absent)
    file(REMOVE ${absent})
  endif()
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  string(REPLACE "Run with --help for more information.\n" "" err "${err}")
  string(REPLACE ";" "," err "${err}")  # a list of lines below
  string(REGEX MATCHALL "[^\n]+" lines "${err}")
  list(LENGTH lines n)
  if(NOT rc MATCHES "^[1-9][0-9]*$" OR NOT n EQUAL 1 OR NOT err MATCHES "${expect}")
    message(FATAL_ERROR "expected a failure with one line on stderr matching '${expect}'; "
                        "exit ${rc}, ${n} line(s)")
  endif()
  if(absent AND EXISTS ${absent})
    message(FATAL_ERROR "the failed command left ${absent} behind")
  endif()
endfunction()

if(NOT CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  return()  # included
endif()
if(SOURCE)
  file(READ ${SOURCE} text)
  string(FIND "${text}" "${FIND}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "'${FIND}' is not in ${SOURCE}")
  endif()
  string(REPLACE "${FIND}" "${REPLACE}" text "${text}")
  file(WRITE ${INPUT} "${text}")
endif()
string(REPLACE "|" ";" args "${ARGS}")
expect_cli_error("${EXPECT}" "${ABSENT}" ${OCTET} ${args})
