# The threading guide's incrementer: dequeue, add one, enqueue.
quern_add_example(incrementer
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/threading/incrementer.cpp
  LIBS quern::coordination quern::logging quern_command_line)
