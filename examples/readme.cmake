# The README's programs, kept compiling and running (CTest runs them).
quern_add_example(hello_queue
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/readme/hello_queue.cpp
  LIBS quern::quern)
quern_add_example(shared_handles
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/readme/shared_handles.cpp
  LIBS quern::quern)
if(QUERN_BUILD_TESTS AND BUILD_TESTING)
  add_test(NAME example_hello_queue COMMAND quern_example_hello_queue
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(example_hello_queue PROPERTIES
    PASS_REGULAR_EXPRESSION "done: FIFOQueue '.*' is closed and has insufficient elements")
  add_test(NAME example_shared_handles COMMAND quern_example_shared_handles
           WORKING_DIRECTORY ${PROJECT_BINARY_DIR})
  set_tests_properties(example_shared_handles PROPERTIES
    PASS_REGULAR_EXPRESSION "4 consumers took every element once: sum 500500")
endif()
