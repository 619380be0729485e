# The QueueRunner training program of the threading guide (seeds 001/002).
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(queue_runner_training
               ${CMAKE_CURRENT_LIST_DIR}/threading/queue_runner_training.cpp)
target_link_libraries(queue_runner_training PRIVATE quern::actors quern::logging
                                                    Boost::program_options quern_warnings)
set_target_properties(queue_runner_training PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                       ${CMAKE_BINARY_DIR}/examples)
