# Examples from the seeds' "Threading and Queues" guide (seeds 001, 002).
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(incrementer ${CMAKE_CURRENT_LIST_DIR}/threading/incrementer.cpp)
target_link_libraries(incrementer PRIVATE quern::actors quern::logging Boost::program_options
                                          quern_warnings)
set_target_properties(incrementer PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                             ${CMAKE_BINARY_DIR}/examples)
