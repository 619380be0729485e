# bench_reading_pipeline: the flagship's input pipeline without the model
# (CSV -> readers -> decode_csv -> shuffle_batch) beside a plain
# single-threaded read-and-parse loop.
find_package(Boost REQUIRED COMPONENTS program_options)
add_executable(quern_bench_reading_pipeline ${CMAKE_CURRENT_LIST_DIR}/reading_pipeline.cpp)
target_link_libraries(quern_bench_reading_pipeline PRIVATE quern::input Boost::program_options
                                                     quern_warnings)
set_target_properties(quern_bench_reading_pipeline PROPERTIES OUTPUT_NAME bench_reading_pipeline
  RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
