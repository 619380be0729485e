# The README's program, kept compiling and running (CTest runs it).
add_executable(hello_queue ${CMAKE_CURRENT_LIST_DIR}/readme/hello_queue.cpp)
target_link_libraries(hello_queue PRIVATE quern::actors quern::logging quern_warnings)
set_target_properties(hello_queue PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                             ${CMAKE_BINARY_DIR}/examples)
if(BUILD_TESTING)
  add_test(NAME example_hello_queue COMMAND hello_queue
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(example_hello_queue PROPERTIES
    PASS_REGULAR_EXPRESSION "done: FIFOQueue '.*' is closed and has insufficient elements")
endif()
