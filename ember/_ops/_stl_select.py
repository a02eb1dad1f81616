"""libstdc++'s std::nth_element, std::sort and std::partial_sort, step for step, on a Python list.

torch's CPU topk kernel (aten TopKImpl.h) and its unstable sort run these on (value, index) pairs with a
value-only comparator, so which of several equal values topk returns, the order of an unsorted topk result,
and the order of equal values in sort(stable=False) (and so mode's index) are those algorithms'.  A stable
sort picks differently (a zero-initialised MoE router sends every token to experts 2 and 3 in torch, 0 and 1
in a stable sort), so ember/_ops/sorting.py replays them on the slices where ties make it matter; kthvalue's
quick-select is torch's own (torch_quick_select below).  `less` is a strict weak order; ranges are
[first, last) positions in `q`.
"""

from __future__ import annotations


def _lg(n):
    return n.bit_length() - 1


def _move_median_to_first(q, result, a, b, c, less):
    if less(q[a], q[b]):
        if less(q[b], q[c]):
            q[result], q[b] = q[b], q[result]
        elif less(q[a], q[c]):
            q[result], q[c] = q[c], q[result]
        else:
            q[result], q[a] = q[a], q[result]
    elif less(q[a], q[c]):
        q[result], q[a] = q[a], q[result]
    elif less(q[b], q[c]):
        q[result], q[c] = q[c], q[result]
    else:
        q[result], q[b] = q[b], q[result]


def _unguarded_partition(q, first, last, pivot, less):
    while True:
        while less(q[first], q[pivot]):
            first += 1
        last -= 1
        while less(q[pivot], q[last]):
            last -= 1
        if not first < last:
            return first
        q[first], q[last] = q[last], q[first]
        first += 1


def _partition_pivot(q, first, last, less):
    mid = first + (last - first) // 2
    _move_median_to_first(q, first, first + 1, mid, last - 1, less)
    return _unguarded_partition(q, first + 1, last, first, less)


def _unguarded_linear_insert(q, i, less):
    val = q[i]
    nxt = i - 1
    while less(val, q[nxt]):
        q[i] = q[nxt]
        i = nxt
        nxt -= 1
    q[i] = val


def _insertion_sort(q, first, last, less):
    if first == last:
        return
    for i in range(first + 1, last):
        if less(q[i], q[first]):
            val = q[i]
            q[first + 1:i + 1] = q[first:i]
            q[first] = val
        else:
            _unguarded_linear_insert(q, i, less)


def _adjust_heap(q, first, hole, length, value, less):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(q[first + child], q[first + child - 1]):
            child -= 1
        q[first + hole] = q[first + child]
        hole = child
    if (length & 1) == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        q[first + hole] = q[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(q[first + parent], value):
        q[first + hole] = q[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    q[first + hole] = value


def _make_heap(q, first, last, less):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(q, first, parent, length, q[first + parent], less)
        if parent == 0:
            return
        parent -= 1


def _pop_heap(q, first, last, result, less):
    value = q[result]
    q[result] = q[first]
    _adjust_heap(q, first, 0, last - first, value, less)


def _heap_select(q, first, middle, last, less):
    _make_heap(q, first, middle, less)
    for i in range(middle, last):
        if less(q[i], q[first]):
            _pop_heap(q, first, middle, i, less)


def _sort_heap(q, first, last, less):
    while last - first > 1:
        last -= 1
        _pop_heap(q, first, last, last, less)


def partial_sort(q, first, middle, last, less):
    _heap_select(q, first, middle, last, less)
    _sort_heap(q, first, middle, less)


def _introsort_loop(q, first, last, depth, less):
    while last - first > 16:
        if depth == 0:
            partial_sort(q, first, last, last, less)
            return
        depth -= 1
        cut = _partition_pivot(q, first, last, less)
        _introsort_loop(q, cut, last, depth, less)
        last = cut


def sort(q, first, last, less):
    if first == last:
        return
    _introsort_loop(q, first, last, _lg(last - first) * 2, less)
    if last - first > 16:
        _insertion_sort(q, first, first + 16, less)
        for i in range(first + 16, last):
            _unguarded_linear_insert(q, i, less)
    else:
        _insertion_sort(q, first, last, less)


def nth_element(q, first, nth, last, less):
    if first == last or nth == last:
        return
    depth = _lg(last - first) * 2
    while last - first > 3:
        if depth == 0:
            _heap_select(q, first, nth + 1, last, less)
            q[first], q[nth] = q[nth], q[first]
            return
        depth -= 1
        cut = _partition_pivot(q, first, last, less)
        if cut <= nth:
            first = cut
        else:
            last = cut
    _insertion_sort(q, first, last, less)


def torch_quick_select(q, k, greater):
    """torch's own quick_select_template (aten SortingUtils / Sorting.cpp, Sedgewick's partition) as kthvalue
    runs it: afterwards q[k] holds the k-th smallest (0-based) under `greater` (its gt_or_nan)."""
    left, right = 0, len(q) - 1
    while True:
        if right <= left:
            return
        if right == left + 1:
            if greater(q[left], q[right]):
                q[left], q[right] = q[right], q[left]
            return
        p = (left + right) >> 1
        q[p], q[left + 1] = q[left + 1], q[p]
        if greater(q[left + 1], q[right]):
            q[left + 1], q[right] = q[right], q[left + 1]
        if greater(q[left], q[right]):
            q[left], q[right] = q[right], q[left]
        if greater(q[left + 1], q[left]):
            q[left + 1], q[left] = q[left], q[left + 1]
        i, j = left + 1, right
        pivot = q[left]
        while True:
            i += 1
            while greater(pivot, q[i]):
                i += 1
            j -= 1
            while greater(q[j], pivot):
                j -= 1
            if j < i:
                break
            q[i], q[j] = q[j], q[i]
        q[left], q[j] = q[j], q[left]
        if j <= k:
            left = i
        if j >= k:
            right = j - 1
