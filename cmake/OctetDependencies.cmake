# Resolves the OCTET_WITH_<X> = AUTO|ON|OFF options into OCTET_HAVE_<X> (0/1).
# ON fails the configure when the dependency is missing; AUTO uses it when found; the summary
# line printed by octet_print_summary() says what was found either way.

function(octet_tristate name doc)
  set(${name} AUTO CACHE STRING "${doc} (AUTO|ON|OFF)")
  set_property(CACHE ${name} PROPERTY STRINGS AUTO ON OFF)
  string(TOUPPER "${${name}}" value)
  if(NOT value MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "${name} must be AUTO, ON or OFF, not '${${name}}'")
  endif()
  set(${name} ${value} PARENT_SCOPE)
endfunction()

# octet_resolve(<X> <found>): sets OCTET_HAVE_<X> and records the line for the summary.
function(octet_resolve what found detail)
  set(option OCTET_WITH_${what})
  if(${option} STREQUAL "OFF")
    set(have 0)
    set(state "off")
  elseif(found)
    set(have 1)
    set(state "yes (${detail})")
  elseif(${option} STREQUAL "ON")
    message(FATAL_ERROR "${option}=ON but ${what} was not found: ${detail}")
  else()
    set(have 0)
    set(state "not found")
  endif()
  set(OCTET_HAVE_${what} ${have} PARENT_SCOPE)
  set_property(GLOBAL APPEND PROPERTY OCTET_SUMMARY "${what}: ${state}")
endfunction()

function(octet_print_summary)
  get_property(items GLOBAL PROPERTY OCTET_SUMMARY)
  string(REPLACE ";" ", " line "${items}")
  message(STATUS "Octet ${PROJECT_VERSION}: ${line}")
endfunction()
