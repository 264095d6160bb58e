# One `octet codec` command that must fail cleanly: a non-zero exit, one line on stderr naming the
# file and the reason, and no output file left behind (cmake -DOCTET=octet -DWORK=dir -DCASE=name
# -P cli_errors.cmake; the cases are listed in CMakeLists.txt).
include(${CMAKE_CURRENT_LIST_DIR}/../cli_error.cmake)

file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
file(WRITE ${WORK}/in.f32 "abcdefghijkl")  # 12 bytes: three finite fp32 values
file(WRITE ${WORK}/odd.f32 "abc")
execute_process(COMMAND ${OCTET} codec encode ${WORK}/in.f32 ${WORK}/in.oct8 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "could not encode the input (${rc})")
endif()
set(out ${WORK}/out.bin)

if(CASE STREQUAL "missing_input")
  expect_cli_error("cannot open .*/missing.f32: No such file or directory" ${out}
                   ${OCTET} codec encode ${WORK}/missing.f32 ${out})
elseif(CASE STREQUAL "directory_input")  # was libstdc++'s "basic_filebuf::underflow error ..."
  expect_cli_error("cannot read .*: Is a directory" ${out} ${OCTET} codec decode ${WORK} ${out})
elseif(CASE STREQUAL "directory_output")
  expect_cli_error("cannot write .*: Is a directory" "" ${OCTET} codec encode ${WORK}/in.f32 ${WORK})
elseif(CASE STREQUAL "missing_output_folder")
  expect_cli_error("cannot write .*/no/out.bin: No such file or directory" ${WORK}/no/out.bin
                   ${OCTET} codec decode ${WORK}/in.oct8 ${WORK}/no/out.bin)
elseif(CASE STREQUAL "full_device")  # the write fails only when the file is closed
  if(NOT EXISTS /dev/full)
    message(STATUS "no /dev/full here: nothing to check")
    return()
  endif()
  expect_cli_error("cannot write /dev/full: No space left on device" ""
                   ${OCTET} codec decode ${WORK}/in.oct8 /dev/full)
elseif(CASE STREQUAL "odd_size_input")
  expect_cli_error("odd.f32: size is not a multiple of 4 bytes" ${out}
                   ${OCTET} codec encode ${WORK}/odd.f32 ${out})
elseif(CASE STREQUAL "bad_payload")
  expect_cli_error("truncated payload" ${out} ${OCTET} codec decode ${WORK}/in.f32 ${out})
elseif(CASE STREQUAL "negative_block")  # was CLI11's "Could not convert: --block = -1"
  expect_cli_error("--block: must be a whole number >= 0, not '-1'" ${out}
                   ${OCTET} codec encode --block -1 ${WORK}/in.f32 ${out})
elseif(CASE STREQUAL "negative_n")  # was "cannot create std::vector larger than max_size()"
  expect_cli_error("--n: must be a whole number >= 1, not '-1'" "" ${OCTET} codec error --n -1)
elseif(CASE STREQUAL "zero_n")  # was a table of zeros
  expect_cli_error("--n: must be a whole number >= 1, not '0'" "" ${OCTET} codec error --n 0)
elseif(CASE STREQUAL "huge_n")  # was std::bad_alloc or the OOM killer
  expect_cli_error("--n 100000000000000: needs about [0-9.]+ GiB, more than the [0-9.]+ GiB" ""
                   ${OCTET} codec error --n 100000000000000)
else()
  message(FATAL_ERROR "unknown case '${CASE}'")
endif()
