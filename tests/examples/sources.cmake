# The example programs, run as a user runs them: they are built with the
# suite (QUERN_BUILD_TESTS requires QUERN_BUILD_EXAMPLES) and found by path.
quern_add_test_suite(quern_test_examples
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/examples_test.cpp ${CMAKE_CURRENT_LIST_DIR}/umbrella_test.cpp
  LIBS quern::quern)
# umbrella_test.cpp includes nothing but <quern/quern.hpp>: compiled on its
# own, so that no header of a batch stands in for one the umbrella misses.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/umbrella_test.cpp
                            PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
target_include_directories(quern_test_examples PRIVATE ${PROJECT_SOURCE_DIR}/tests/input)
foreach(example csv_pipeline five_groups queue_runner_training incrementer hello_queue
                shared_handles)
  add_dependencies(quern_test_examples quern_example_${example})
endforeach()
target_compile_definitions(quern_test_examples PRIVATE
  QUERN_EXAMPLES_DIR="$<TARGET_FILE_DIR:quern_example_csv_pipeline>")
