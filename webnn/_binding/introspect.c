/* introspect.c -- read-only views of built graphs (webnn_introspect.h) as
 * Python data. */
#include "binding.h"

/* ---- read-only views (webnn_introspect.h) ------------------------------- */
static PyObject *
view_obj(const wnn_operand_view *v)
{
    const wnn_op_info *info = v->kind == WNN_ORIGIN_NODE ? wnn_op_get(v->op) : NULL;
    PyObject *shape = shape_tuple(&v->desc);
    if (!shape) {
        return NULL;
    }
    return Py_BuildValue(
        "{s:s,s:s,s:N,s:z,s:z,s:z,s:K}", "kind",
        v->kind == WNN_ORIGIN_INPUT ? "input"
        : v->kind == WNN_ORIGIN_CONSTANT ? "constant" : "node",
        "data_type", wnn_dtype_name(v->desc.dtype), "shape", shape, "name",
        v->name, "operator", info ? info->camel : NULL, "label", v->label,
        "constant_bytes", (unsigned long long)v->constant_bytes);
}

static PyObject *
ids_list(const uint32_t *ids, uint32_t n)
{
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        PyList_SET_ITEM(l, i, PyLong_FromUnsignedLong(ids[i]));
    }
    return l;
}

/* the schedule's steps (wnn_graph_step_view) as a list of dicts; "inner":
 * run only inside another step (pre_e, pre_d: step index + 1) */
static PyObject *
steps_list(const wnn_graph *g)
{
    uint32_t n = wnn_graph_num_steps(g), n_run = wnn_graph_num_run_steps(g);
    PyObject *l = PyList_New(n);
    for (uint32_t i = 0; l && i < n; i++) {
        wnn_step_view v;
        PyObject *e = NULL;
        if (wnn_graph_step_view(g, i, &v)) {
            PyObject *addend = v.addend == UINT32_MAX
                                   ? wnn_py_newref(Py_None)
                                   : PyLong_FromUnsignedLong(v.addend);
            e = Py_BuildValue("{s:s,s:s,s:I,s:I,s:N,s:N,s:I,s:N,s:I,s:I,s:O}",
                              "kind", v.kind, "operator",
                              wnn_op_get(v.op)->camel, "node", v.node, "at",
                              v.at, "nodes", ids_list(v.nodes, v.n_nodes),
                              "inputs", ids_list(v.in, v.n_in), "result",
                              v.result, "addend", addend, "pre_e", v.pre_e,
                              "pre_d", v.pre_d, "inner",
                              i >= n_run ? Py_True : Py_False);
        }
        if (!e) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, e);
    }
    return l;
}

/* graph_view(graph) -> {"operands": [...], "nodes": [...], "inputs": [ids],
 * "outputs": [ids], "order": [node ids], "arena_bytes": n, "fusion":
 * [group per node, 0 = none], "n_fused": n, "fuses": bool, "steps": [the
 * schedule's steps, steps_list]}; None once the IR is gone. */
PyObject *
graph_view_impl(PyObject *m, wnn_graph *g)
{
    uint32_t no = wnn_graph_num_operands(g), nn = wnn_graph_num_nodes(g);
    if (no == 0) {
        Py_RETURN_NONE;
    }
    PyObject *ops = PyList_New(no), *nodes = PyList_New(nn);
    PyObject *ins = PyList_New(0), *outs = PyList_New(0), *order = PyList_New(0);
    PyObject *fusion = PyList_New(nn), *steps = steps_list(g);
    uint32_t *groups = PyMem_Calloc((size_t)nn + 1, sizeof(uint32_t));
    PyObject *result = NULL;
    if (!ops || !nodes || !ins || !outs || !order || !fusion || !groups || !steps) {
        PyErr_NoMemory();
        goto done;
    }
    for (uint32_t i = 0; i < no; i++) {
        wnn_operand_view v;
        PyObject *e = wnn_graph_operand_view(g, i, &v) ? view_obj(&v)
                                                        : wnn_py_newref(Py_None);
        if (!e) {
            goto done;
        }
        PyList_SET_ITEM(ops, i, e);
    }
    for (uint32_t i = 0; i < nn; i++) {
        wnn_node_view v;
        PyObject *e = NULL;
        if (wnn_graph_node_view(g, i, &v)) {
            e = Py_BuildValue("{s:s,s:z,s:N,s:N}", "operator",
                              wnn_op_get(v.op)->camel, "label", v.label,
                              "inputs", ids_list(v.in, v.n_in), "outputs",
                              ids_list(v.out, v.n_out));
        }
        if (!e) {
            goto done;
        }
        PyList_SET_ITEM(nodes, i, e);
    }
    for (uint32_t i = 0; i < wnn_graph_num_inputs(g); i++) {
        PyObject *x = PyLong_FromUnsignedLong(wnn_graph_input_operand(g, i));
        if (!x || PyList_Append(ins, x) != 0) {
            Py_XDECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
    for (uint32_t i = 0; i < wnn_graph_num_outputs(g); i++) {
        PyObject *x = PyLong_FromUnsignedLong(wnn_graph_output_operand(g, i));
        if (!x || PyList_Append(outs, x) != 0) {
            Py_XDECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
    for (uint32_t i = 0; i < wnn_graph_plan_length(g); i++) {
        PyObject *x = PyLong_FromUnsignedLong(wnn_graph_plan_node(g, i));
        if (!x || PyList_Append(order, x) != 0) {
            Py_XDECREF(x);
            goto done;
        }
        Py_DECREF(x);
    }
    int n_fused = wnn_graph_fusion_groups(g, groups);
    for (uint32_t i = 0; i < nn; i++) {
        PyList_SET_ITEM(fusion, i, PyLong_FromUnsignedLong(n_fused > 0 ? groups[i] : 0));
    }
    result = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:K,s:O,s:i,s:O,s:O}", "operands", ops,
                           "nodes", nodes, "inputs", ins, "outputs", outs,
                           "order", order,
                           "arena_bytes",
                           (unsigned long long)wnn_graph_plan_arena_bytes(g),
                           "fusion", fusion, "n_fused", n_fused < 0 ? 0 : n_fused,
                           "fuses", wnn_graph_fuses(g) ? Py_True : Py_False,
                           "steps", steps);
done:
    Py_XDECREF(ops);
    Py_XDECREF(nodes);
    Py_XDECREF(ins);
    Py_XDECREF(outs);
    Py_XDECREF(order);
    Py_XDECREF(fusion);
    Py_XDECREF(steps);
    PyMem_Free(groups);
    return result;
}

/* context_backend(context) -> (backend name, threads) */
PyObject *
context_backend_impl(PyObject *m, wnn_context *c)
{
    return Py_BuildValue("(si)", wnn_context_backend_name(c), wnn_context_threads(c));
}

/* op_prefix(op, label) -> "conv2d (label 'stem')": the one place that
 * writes the prefix of an operator's messages (the core's wnn_op_prefix). */
PyObject *
m_op_prefix(PyObject *m, PyObject *args)
{
    const char *op, *label = NULL;
    if (!PyArg_ParseTuple(args, "s|z:op_prefix", &op, &label)) {
        return NULL;
    }
    char buf[160];
    wnn_op_prefix(op, label, buf, sizeof(buf));
    return PyUnicode_DecodeUTF8(buf, (Py_ssize_t)strlen(buf), "replace");
}

