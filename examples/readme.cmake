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

# The README's program with handles shared by threads.
add_executable(shared_handles ${CMAKE_CURRENT_LIST_DIR}/readme/shared_handles.cpp)
target_link_libraries(shared_handles PRIVATE quern::actors quern::logging quern_warnings)
set_target_properties(shared_handles PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                ${CMAKE_BINARY_DIR}/examples)
if(BUILD_TESTING)
  add_test(NAME example_shared_handles COMMAND shared_handles
           WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  set_tests_properties(example_shared_handles PROPERTIES
    PASS_REGULAR_EXPRESSION "4 consumers took every element once: sum 500500")
endif()
