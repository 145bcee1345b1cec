# SPDX-License-Identifier: Apache-2.0
# Fails unless README.md shows examples/quickstart.cpp verbatim from its first #include line on,
# so the README's example is always the one the build compiles.
file(READ ${EXAMPLE} example)
file(READ ${README} readme)
string(FIND "${example}" "\n#include" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${EXAMPLE} has no #include line")
endif()
math(EXPR start "${start} + 1")
string(SUBSTRING "${example}" ${start} -1 body)
string(FIND "${readme}" "${body}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "README.md does not show ${EXAMPLE} as it is (from its first #include on); "
    "copy it again")
endif()
