# Fails when a source file includes a header of a layer above its own (docs/design.md). Each rule:
# <folder>|<forbidden include prefixes, comma-separated>. Run: cmake -DROOT=<repo> -P layering.cmake
set(above_codec "collectives/,transport/,predictor/,cli/,verify/,bench/,octet/collectives.h,octet/transport,octet/octet_c.h,octet/octet_mpi.h")
set(rules
  "src/base|codec/,${above_codec},octet/codec.h,octet/cuda.h,octet/error_feedback.h"
  "src/codec|${above_codec}"
  "kernels|${above_codec}"
  "src/transport|codec/,collectives/,predictor/,cli/,verify/,bench/,octet/codec.h,octet/collectives.h,octet/octet_c.h"
  "src/collectives|predictor/,cli/,verify/,bench/"
  "src/predictor|codec/,collectives/,transport/,base/,cli/,verify/,bench/"
  "src/train|codec/,collectives/,transport/,base/,predictor/,cli/,verify/,bench/"
  "src/verify|codec/,collectives/,transport/,base/,predictor/,cli/,bench/"
  "bench|codec/,collectives/,transport/,base/,predictor/,cli/"
  "plugins|codec/,collectives/,transport/,base/,predictor/,cli/,verify/,bench/,octet/codec.h,octet/collectives.h,octet/cuda.h,octet/transport")
set(violations "")
foreach(rule ${rules})
  string(REPLACE "|" ";" parts "${rule}")
  list(GET parts 0 folder)
  list(GET parts 1 forbidden)
  string(REPLACE "," ";" forbidden "${forbidden}")
  file(GLOB_RECURSE files ${ROOT}/${folder}/*.h ${ROOT}/${folder}/*.cc ${ROOT}/${folder}/*.cu
       ${ROOT}/${folder}/*.cuh ${ROOT}/${folder}/*.c)
  foreach(file ${files})
    file(STRINGS ${file} includes REGEX "^#include \"")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
      foreach(prefix ${forbidden})
        string(FIND "${header}" "${prefix}" at)
        if(at EQUAL 0)
          file(RELATIVE_PATH rel ${ROOT} ${file})
          string(APPEND violations "  ${rel} includes ${header} (a layer above ${folder})\n")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
if(violations)
  message(FATAL_ERROR "layering violations:\n${violations}")
endif()
message(STATUS "layering: no violations")
