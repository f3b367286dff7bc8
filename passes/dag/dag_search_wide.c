/* dag_search_wide.c - dag_search.c again, with 128-bit sets: the exact
 * search for graphs of 65..128 nodes (dag_search_exact calls it). */
#define DAG_SEARCH_WIDE
#include "dag_search.c"
