add_executable(quern_bench_queue_throughput ${CMAKE_CURRENT_LIST_DIR}/queue_throughput.cpp)
target_link_libraries(quern_bench_queue_throughput PRIVATE quern::actors quern_command_line
                                                     quern_warnings)
set_target_properties(quern_bench_queue_throughput PROPERTIES OUTPUT_NAME bench_queue_throughput
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
