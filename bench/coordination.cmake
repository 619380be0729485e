# bench_coordination: stop latency of 1,000 blocked queue-runner workers, and
# a 3-stage pipeline (source -> transform -> batch) through queue runners
# beside the same stages on mutex queues and std::threads.
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(bench_coordination ${CMAKE_CURRENT_LIST_DIR}/coordination.cpp)
target_link_libraries(bench_coordination PRIVATE quern::actors Boost::program_options
                                                 quern_warnings)
set_target_properties(bench_coordination PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                    ${CMAKE_BINARY_DIR}/bench)
