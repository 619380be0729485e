# The five asynchronous groups of the threading guide's first program.
quern_add_example(five_groups
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/asynchronous/five_groups.cpp
  LIBS quern::quern quern_command_line)
