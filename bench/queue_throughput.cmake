find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(bench_queue_throughput ${CMAKE_CURRENT_LIST_DIR}/queue_throughput.cpp)
target_link_libraries(bench_queue_throughput PRIVATE quern::actors Boost::program_options
                                                     quern_warnings)
set_target_properties(bench_queue_throughput PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                        ${CMAKE_BINARY_DIR}/bench)
