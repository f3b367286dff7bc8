/* alloc_search.h - the exact placement search behind alloc_intervals_ex
 * (private to passes/alloc.c and passes/alloc_search.c).
 */
#ifndef ACC_ALLOC_SEARCH_H
#define ACC_ALLOC_SEARCH_H

#include "passes.h"

typedef enum { SEARCH_FOUND, SEARCH_INFEASIBLE, SEARCH_LIMIT } SearchStatus;

typedef struct {
    int64_t work_limit; /* stop when work reaches it */
    double deadline;    /* CLOCK_MONOTONIC seconds; <= 0: none */
    int64_t work, nodes;
    bool time_out;
} SearchBudget;

typedef struct AllocSearch AllocSearch;

/* Preprocess n items (every one with size > 0 and lower < upper): time
 * sections, independent components, symmetry classes, the value order. */
AllocSearch *alloc_search_new(const AllocItem *items, int n);
void alloc_search_free(AllocSearch *s);
/* Is there a placement with every buffer below capacity? FOUND writes
 * offsets[i] for every item; INFEASIBLE is a proof; LIMIT: the budget ran out. */
SearchStatus alloc_search_fit(AllocSearch *s, int64_t capacity, int64_t *offsets, SearchBudget *b);

#endif
