file(GLOB quern_input_test_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_test.cpp)
quern_add_test_suite(quern_test_input
  SOURCES ${quern_input_test_sources}
  LIBS quern::input)
# examples_test.cpp runs the example programs: they are built with the suite
# (QUERN_BUILD_TESTS requires QUERN_BUILD_EXAMPLES) and found by path.
foreach(example csv_pipeline five_groups queue_runner_training incrementer hello_queue
                shared_handles)
  add_dependencies(quern_test_input quern_example_${example})
endforeach()
target_compile_definitions(quern_test_input PRIVATE
  QUERN_EXAMPLES_DIR="$<TARGET_FILE_DIR:quern_example_csv_pipeline>")
