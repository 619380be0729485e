# bench_coordination: stop latency of 1,000 blocked queue-runner workers, and
# a 3-stage pipeline (source -> transform -> batch) through queue runners
# beside the same stages on mutex queues and std::threads.
add_executable(quern_bench_coordination ${CMAKE_CURRENT_LIST_DIR}/coordination.cpp)
target_link_libraries(quern_bench_coordination PRIVATE quern::coordination quern_command_line
                                                 quern_warnings)
set_target_properties(quern_bench_coordination PROPERTIES OUTPUT_NAME bench_coordination
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
