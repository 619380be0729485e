# The five asynchronous groups of seed 000.
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(five_groups ${CMAKE_CURRENT_LIST_DIR}/asynchronous/five_groups.cpp)
target_link_libraries(five_groups PRIVATE quern::actors quern::logging Boost::program_options
                                          quern_warnings)
set_target_properties(five_groups PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                             ${CMAKE_BINARY_DIR}/examples)
