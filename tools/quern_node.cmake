# quern-node: serves queues, a coordinator and summary writers given on its
# command line to other processes (tools/quern_node/, docs/distributed.md).
add_library(quern_node_flags STATIC ${CMAKE_CURRENT_LIST_DIR}/quern_node/flags.cpp)
target_include_directories(quern_node_flags PUBLIC ${CMAKE_CURRENT_LIST_DIR}/quern_node)
target_link_libraries(quern_node_flags PUBLIC quern::net PRIVATE quern_warnings)

add_executable(quern-node ${CMAKE_CURRENT_LIST_DIR}/quern_node/main.cpp)
target_link_libraries(quern-node PRIVATE quern_node_flags quern::net quern::logging
                      quern_command_line quern_warnings)
