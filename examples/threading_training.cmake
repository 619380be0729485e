# The QueueRunner training program of the threading guide.
quern_add_example(queue_runner_training
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/threading/queue_runner_training.cpp
  LIBS quern::coordination quern::logging quern_command_line)
