# Examples from the seeds' "Reading data" guide (seed 003): the flagship.
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(csv_pipeline ${CMAKE_CURRENT_LIST_DIR}/reading/csv_pipeline.cpp)
target_link_libraries(csv_pipeline PRIVATE quern::input Boost::program_options quern_warnings)
set_target_properties(csv_pipeline PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                              ${CMAKE_BINARY_DIR}/examples)
