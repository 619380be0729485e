# bench_reading_pipeline: the flagship's input pipeline without the model
# (CSV -> readers -> decode_csv -> shuffle_batch) beside a plain
# single-threaded read-and-parse loop.
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(bench_reading_pipeline ${CMAKE_CURRENT_LIST_DIR}/reading_pipeline.cpp)
target_link_libraries(bench_reading_pipeline PRIVATE quern::input Boost::program_options
                                                     quern_warnings)
set_target_properties(bench_reading_pipeline PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                        ${CMAKE_BINARY_DIR}/bench)
