//! The query methods `Index` and `Snapshot` share, written once: [`query_methods!`] puts them
//! into a class's one `#[pymethods]` block among its own methods. A class supplies
//! `queried(&self) -> PyResult<Arc<engine::Snapshot>>`, the version its queries read (a
//! snapshot: its pinned version; an index: its newest committed one), and `close(&self)`,
//! which the shared `__exit__` calls.

/// `#[pymethods] impl $class { <its own methods> <the shared query methods> <its own> }`
/// (two groups, so the query methods keep their place in the class's documentation).
macro_rules! query_methods {
    ($class:ty, { $($before:tt)* }, { $($after:tt)* }) => {
        #[pymethods]
        impl $class {
            $($before)*
            /// k-NN search: the k best live rows per query row, as FAISS's ``search`` returns them.
            ///
            /// Parameters
            /// ----------
            /// q : array_like, shape (nq, d)
            ///     Query descriptors (float32; float64, float16 and uint8 are converted). An empty batch
            ///     (nq = 0) gives ``(0, k)`` arrays.
            /// k : int, default 10
            ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
            ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
            /// mode : str, optional, default None
            ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
            ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
            /// rerank : int, optional, default None
            ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
            ///     k best (R ≥ k; the index must store vectors).
            /// nprobe : int, optional, default None
            ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
            ///     nearest k-means centroids).
            /// classes : iterable of str or int, optional, default None
            ///     Scan only the inverted lists of these classes (names or class ids).
            /// threads : int, default 1
            ///     Scan threads (0: every core).
            /// mih : str, default "auto"
            ///     Hamming k-NN through the segments' multi-index hashing tables: "auto", "on" or "off".
            /// where : str, optional, default None
            ///     Only rows passing this filter expression, e.g. ``"id >= 100 AND id NOT IN (3, 7)"``
            ///     (the language: docs/filtering.md; the CLI's ``--where``).
            /// ids : iterable of int, optional, default None
            ///     Only rows with these ids: a list, set, range or numpy integer array (uint64, or
            ///     non-negative int64); FAISS's ``IDSelectorBatch``, the CLI's ``--ids``. Given with
            ///     ``where``, a row must pass both.
            /// columns : str or iterable of str, optional, default None
            ///     Attribute columns to return beside the hits (the CLI's ``--with``): the result gains a
            ///     third item, a dict of column name → numpy array shaped like ``I`` (int → int64, float →
            ///     float64, timestamp → datetime64[us], bool → bool, string → object array of str, tags →
            ///     object array of lists of str). A padding position (id -1) holds the column's default.
            /// as_frame : bool, default False
            ///     Return a pandas DataFrame instead of arrays: one row per hit (padding dropped), columns
            ///     ``query``, ``rank``, ``id`` (uint64), ``score``, then the ``columns``.
            ///
            /// Returns
            /// -------
            /// D : numpy.ndarray, shape (nq, k)
            ///     Scores, best first: int32 Hamming distances (padding 2**31-1), or float32 (padding +inf
            ///     when smaller is better, -inf for the -ip modes).
            /// I : numpy.ndarray of int64, shape (nq, k)
            ///     Ids, ties by smaller id; -1 pads. Each id's 64 bits: ``I.view(numpy.uint64)`` gives ids
            ///     at or above 2**63 exactly.
            /// columns : dict of str to numpy.ndarray
            ///     Only with ``columns``: each chosen column's value per hit, shaped like ``I``.
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     Wrong width, NaN, k < 1, rerank < k, an unknown mode or class, a count out of range
            ///     (``k=-1``, ``k=2**64``), a mode that does not apply to the codes.
            ///     A ``where`` that does not parse, names a column the index lacks or compares it with a
            ///     value of the wrong type (the message names the character column); a negative id
            ///     in ``ids``.
            /// TypeError
            ///     Input that is not a numeric array (names the argument).
            /// ClosedError
            ///     The index or snapshot was closed.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> D, I = idx.search(x[:2], k=3)
            /// >>> D.shape, I.dtype, int(I[0, 0]), int(D[0, 0])
            /// ((2, 3), dtype('int64'), 0, 0)
            /// >>> idx.search(x[:0], k=3)[1].shape
            /// (0, 3)
            /// >>> D, I = idx.search(x[:1], k=3, where="id >= 300", ids=range(290, 400))
            /// >>> bool(((I >= 300) & (I < 400)).all())
            /// True
            #[pyo3(signature = (q, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto", r#where=None, ids=None, columns=None, as_frame=false))]
            #[allow(clippy::too_many_arguments)]
            pub fn search<'py>(
                &self,
                py: Python<'py>,
                q: &Bound<'py, PyAny>,
                k: i128,
                mode: Option<&str>,
                rerank: Option<i128>,
                nprobe: Option<i128>,
                classes: Option<&Bound<'py, PyAny>>,
                threads: i128,
                mih: &str,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
                columns: Option<&Bound<'py, PyAny>>,
                as_frame: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let out = crate::result_columns::ResultColumns::new(columns, as_frame)?;
                let args = crate::query::QueryArgs::new(k, mode, rerank, nprobe, classes, threads, mih, r#where, ids)?;
                crate::query::search(py, &*self.queried()?, q, &args, &out)
            }

            /// The filtered IVF plan's counts per query: its lists in probe order with their passing and
            /// live rows, for a driver deciding over several shards (docs/filtering.md, "IVF").
            ///
            /// A probed ADC search of an IVF model under a filter reads a query's ``nprobe`` nearest lists,
            /// then the next-nearest while they hold fewer passing rows than it keeps (k, or R when
            /// re-ranked), unless the flat search over every passing row reads less. A sharded index sums
            /// these counts over its shards, decides once per query with :func:`ivf_probe_decision` and has
            /// every shard run :meth:`search_ivf_planned`, so it answers as one index holding every row.
            ///
            /// Parameters
            /// ----------
            /// q : array_like, shape (nq, d)
            ///     Query descriptors, as ``search``.
            /// k : int, default 10
            ///     Results per query, as ``search`` (with ``rerank``, the depth the plan fills).
            /// mode : str, optional, default None
            ///     As ``search``; the plan runs for the ADC mode only.
            /// rerank : int, optional, default None
            ///     As ``search``: the plan fills R candidates instead of k.
            /// nprobe : int, optional, default None
            ///     Lists every query reads at least (1 ≤ nprobe ≤ the model's lists).
            /// threads : int, default 1
            ///     Threads (0: every core); the counts do not depend on it.
            /// where : str, optional, default None
            ///     The filter expression, as ``search``.
            /// ids : iterable of int, optional, default None
            ///     The id selector, as ``search``.
            /// start : iterable of int, optional, default None
            ///     Per query, the position in its probe order to count from (None: every query from 0).
            /// count : int, optional, default None
            ///     Lists to count per query from ``start`` (fewer at the end of the order); None: as many as
            ///     this index's own plan reads before it decides (``nprobe`` at least).
            ///
            /// Returns
            /// -------
            /// counts : list of tuple or None
            ///     Per query ``(lists, passing, read)``, int64 arrays in probe order: the list ids, each
            ///     list's live rows the filter passes and its live rows. None when a search with these
            ///     arguments does not run the plan (not an IVF model, another mode, no ``nprobe`` or no
            ///     filter).
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     As ``search`` (width, counts, ``nprobe`` out of range, a ``where`` that does not parse);
            ///     ``start`` not one position per query.
            /// ClosedError
            ///     The index or snapshot was closed.
            ///
            /// Examples
            /// --------
            /// >>> m = codedb.train(x, "ivf:4,pq:4x8", seed=3)
            /// >>> idx = codedb.Index.build(path, m, x)
            /// >>> lists, passing, read = idx.ivf_list_counts(x[:1], k=5, nprobe=1, where="id < 100")[0]
            /// >>> len(lists) >= 1 and bool((passing <= read).all())
            /// True
            #[pyo3(signature = (q, k=10, mode=None, rerank=None, nprobe=None, threads=1, r#where=None, ids=None, start=None, count=None))]
            #[allow(clippy::too_many_arguments)]
            pub fn ivf_list_counts<'py>(
                &self,
                py: Python<'py>,
                q: &Bound<'py, PyAny>,
                k: i128,
                mode: Option<&str>,
                rerank: Option<i128>,
                nprobe: Option<i128>,
                threads: i128,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
                start: Option<&Bound<'py, PyAny>>,
                count: Option<i128>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let args = crate::query::QueryArgs::new(k, mode, rerank, nprobe, None, threads, "auto", r#where, ids)?;
                crate::query::ivf_list_counts(py, &*self.queried()?, q, &args, start, count)
            }

            /// Live rows passing a filter: what the plans of a filtered probed search decide by (summed
            /// over the shards of a sharded index, docs/filtering.md "IVF").
            ///
            /// Parameters
            /// ----------
            /// where : str, optional, default None
            ///     The filter expression, as ``search``.
            /// ids : iterable of int, optional, default None
            ///     The id selector, as ``search``.
            ///
            /// Returns
            /// -------
            /// passing : int
            ///     The live rows passing both (every live row when neither is given).
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     A ``where`` that does not parse or does not type-check, a negative id in ``ids``.
            /// ClosedError
            ///     The index or snapshot was closed.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x)
            /// >>> idx.passing_rows(where="id < 100"), idx.passing_rows(ids=[1, 2, 10**9])
            /// (100, 2)
            #[pyo3(signature = (r#where=None, ids=None))]
            pub fn passing_rows(
                &self,
                py: Python<'_>,
                r#where: Option<&str>,
                ids: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<u64> {
                let snap = self.queried()?;
                let filter = crate::query::FilterArgs::new(r#where, ids)?.filter(&snap)?;
                py.detach(|| engine::passing_rows(&snap, filter.as_ref())).py_err()
            }

            /// k-NN search following a plan per query: the lists to scan, or the flat search over every
            /// passing row — what :func:`ivf_probe_decision` decided over every shard's counts
            /// (:meth:`ivf_list_counts`), so each shard runs the search one index holding every row runs.
            ///
            /// Only for a probed search of an IVF model under a filter: by ADC (each query its planned lists,
            /// or the flat search), or in an exact mode (each query its lists, or every passing row); scores,
            /// ties and padding as ``search``.
            ///
            /// Parameters
            /// ----------
            /// q : array_like, shape (nq, d)
            ///     Query descriptors, as ``search``.
            /// plan : sequence
            ///     One entry per query: an iterable of list ids to scan, or None for the flat search over
            ///     the passing rows.
            /// k : int, default 10
            ///     Results per query, as ``search``.
            /// mode : str, optional, default None
            ///     As ``search`` (the ADC mode).
            /// rerank : int, optional, default None
            ///     As ``search``: the R best of the planned lists re-scored exactly; a flat query gets the
            ///     exact k best passing rows.
            /// nprobe : int, optional, default None
            ///     As ``search`` (required: the plan is that of a probed search).
            /// threads : int, default 1
            ///     Scan threads (0: every core).
            /// where : str, optional, default None
            ///     The filter expression, as ``search``.
            /// ids : iterable of int, optional, default None
            ///     The id selector, as ``search``.
            ///
            /// Returns
            /// -------
            /// D : numpy.ndarray, shape (nq, k)
            ///     Scores, as ``search``.
            /// I : numpy.ndarray of int64, shape (nq, k)
            ///     Ids, as ``search``.
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     As ``search``; a plan without one entry per query, a list id the model lacks or given
            ///     twice, or a search that is not a probed filtered search of an IVF model.
            /// ClosedError
            ///     The index or snapshot was closed.
            ///
            /// Examples
            /// --------
            /// >>> m = codedb.train(x, "ivf:4,pq:4x8", seed=3)
            /// >>> idx = codedb.Index.build(path, m, x)
            /// >>> D, I = idx.search_ivf_planned(x[:2], [[0, 1], None], k=3, nprobe=1, where="id < 100")
            /// >>> I.shape
            /// (2, 3)
            #[pyo3(signature = (q, plan, k=10, mode=None, rerank=None, nprobe=None, threads=1, r#where=None, ids=None))]
            #[allow(clippy::too_many_arguments)]
            pub fn search_ivf_planned<'py>(
                &self,
                py: Python<'py>,
                q: &Bound<'py, PyAny>,
                plan: &Bound<'py, PyAny>,
                k: i128,
                mode: Option<&str>,
                rerank: Option<i128>,
                nprobe: Option<i128>,
                threads: i128,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                let args = crate::query::QueryArgs::new(k, mode, rerank, nprobe, None, threads, "auto", r#where, ids)?;
                crate::query::search_ivf_planned(py, &*self.queried()?, q, plan, &args)
            }

            /// Text queries ranked by the model's text head (PAMIR; ``train(captions=...)``).
            ///
            /// Words the head does not know are ignored with a ``UserWarning`` naming them; a query with no
            /// known word is an error.
            ///
            /// Parameters
            /// ----------
            /// queries : str or list of str
            ///     One query, or several (an empty list gives ``(0, k)`` arrays).
            /// k : int, default 10
            ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
            ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
            /// mode : str, optional, default None
            ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
            ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
            /// rerank : int, optional, default None
            ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
            ///     k best (R ≥ k; the index must store vectors).
            /// nprobe : int, optional, default None
            ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
            ///     nearest k-means centroids).
            /// classes : iterable of str or int, optional, default None
            ///     Scan only the inverted lists of these classes (names or class ids).
            /// threads : int, default 1
            ///     Scan threads (0: every core).
            /// mih : str, default "auto"
            ///     Accepted for symmetry with ``search`` (text queries scan linearly).
            /// where : str, optional, default None
            ///     Only rows passing this filter expression, e.g. ``"id >= 100 AND id NOT IN (3, 7)"``
            ///     (the language: docs/filtering.md; the CLI's ``--where``).
            /// ids : iterable of int, optional, default None
            ///     Only rows with these ids: a list, set, range or numpy integer array (uint64, or
            ///     non-negative int64); FAISS's ``IDSelectorBatch``, the CLI's ``--ids``. Given with
            ///     ``where``, a row must pass both.
            /// columns : str or iterable of str, optional, default None
            ///     Attribute columns to return beside the hits (the CLI's ``--with``): the result gains a
            ///     third item, a dict of column name → numpy array shaped like ``I`` (int → int64, float →
            ///     float64, timestamp → datetime64[us], bool → bool, string → object array of str, tags →
            ///     object array of lists of str). A padding position (id -1) holds the column's default.
            /// as_frame : bool, default False
            ///     Return a pandas DataFrame instead of arrays: one row per hit (padding dropped), columns
            ///     ``query``, ``rank``, ``id`` (uint64), ``score``, then the ``columns``.
            ///
            /// Returns
            /// -------
            /// D : numpy.ndarray of float32, shape (nq, k)
            ///     Scores, larger is better (padding -inf).
            /// I : numpy.ndarray of int64, shape (nq, k)
            ///     Ids (-1 pads), as ``search``.
            /// columns : dict of str to numpy.ndarray
            ///     Only with ``columns``: each chosen column's value per hit, shaped like ``I``.
            ///
            /// Raises
            /// ------
            /// ModelError
            ///     The model has no text head.
            /// InvalidArgument
            ///     A query with no known word; counts or modes as ``search``.
            ///     A ``where`` that does not parse, names a column the index lacks or compares it with a
            ///     value of the wrong type (the message names the character column); a negative id
            ///     in ``ids``.
            ///
            /// Examples
            /// --------
            /// >>> m = codedb.train(x, "pca-itq:16", seed=3, captions=[["red"] if v else ["blue"] for v in y == 0], pamir_iterations=2000)
            /// >>> idx = codedb.Index.build(path, m, x)
            /// >>> D, I = idx.search_text("red", k=5)
            /// >>> I.shape, D.dtype
            /// ((1, 5), dtype('float32'))
            #[pyo3(signature = (queries, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, mih="auto", r#where=None, ids=None, columns=None, as_frame=false))]
            #[allow(clippy::too_many_arguments)]
            pub fn search_text<'py>(
                &self,
                py: Python<'py>,
                queries: &Bound<'py, PyAny>,
                k: i128,
                mode: Option<&str>,
                rerank: Option<i128>,
                nprobe: Option<i128>,
                classes: Option<&Bound<'py, PyAny>>,
                threads: i128,
                mih: &str,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
                columns: Option<&Bound<'py, PyAny>>,
                as_frame: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let out = crate::result_columns::ResultColumns::new(columns, as_frame)?;
                let args = crate::query::QueryArgs::new(k, mode, rerank, nprobe, classes, threads, mih, r#where, ids)?;
                crate::query::search_text(py, &*self.queried()?, queries, &args, &out)
            }

            /// Query by examples: rows ranked by a linear SVM learned at query time (PiCoDes, Bergamo et
            /// al. NIPS 2011; the CLI's ``search --examples``).
            ///
            /// The examples are encoded with the index's model and decoded (``Model.decode``); the SVM
            /// (squared hinge, each class weighted to half the total cost) learns w and b against the
            /// negatives, and every live row scores ``b + w·decode(code)``.
            ///
            /// Parameters
            /// ----------
            /// examples : array_like, shape (n, d), or list of them
            ///     Positive examples (descriptors). A list (or tuple) of arrays is a batch: one example
            ///     set per array, one result row per set, each equal to a call with that set alone (the
            ///     CLI's ``--example-groups``).
            /// k : int, default 10
            ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
            ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
            /// negatives : array_like, shape (m, d), or list of them, optional, default None
            ///     Negative examples. Default: random live rows (``random_negatives``). With a batch of
            ///     example sets: one array shared by every set, or a list of one array per set.
            /// random_negatives : int, optional, default None
            ///     Draw this many live rows as negatives (default 1000, at most the live rows).
            /// seed : int, default 1234
            ///     Seed of the random negatives and of the SVM's visiting order (``codedb``'s one default
            ///     seed, as ``train``'s and the CLI's).
            /// svm_c : float, optional, default None
            ///     The SVM's cost C (None: 1).
            /// mode : str, optional, default None
            ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
            ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
            /// rerank : int, optional, default None
            ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
            ///     k best (R ≥ k; the index must store vectors).
            /// nprobe : int, optional, default None
            ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
            ///     nearest k-means centroids).
            /// classes : iterable of str or int, optional, default None
            ///     Scan only the inverted lists of these classes (names or class ids).
            /// threads : int, default 1
            ///     Scan threads (0: every core).
            /// where : str, optional, default None
            ///     Only rows passing this filter expression, e.g. ``"id >= 100 AND id NOT IN (3, 7)"``
            ///     (the language: docs/filtering.md; the CLI's ``--where``).
            /// ids : iterable of int, optional, default None
            ///     Only rows with these ids: a list, set, range or numpy integer array (uint64, or
            ///     non-negative int64); FAISS's ``IDSelectorBatch``, the CLI's ``--ids``. Given with
            ///     ``where``, a row must pass both.
            /// columns : str or iterable of str, optional, default None
            ///     Attribute columns to return beside the hits (the CLI's ``--with``): the result gains a
            ///     third item, a dict of column name → numpy array shaped like ``I`` (int → int64, float →
            ///     float64, timestamp → datetime64[us], bool → bool, string → object array of str, tags →
            ///     object array of lists of str). A padding position (id -1) holds the column's default.
            /// as_frame : bool, default False
            ///     Return a pandas DataFrame instead of arrays: one row per hit (padding dropped), columns
            ///     ``query``, ``rank``, ``id`` (uint64), ``score``, then the ``columns``.
            ///
            /// Returns
            /// -------
            /// D : numpy.ndarray of float32, shape (1, k) (a batch: (sets, k))
            ///     Scores, larger is better (padding -inf).
            /// I : numpy.ndarray of int64, shape (1, k) (a batch: (sets, k))
            ///     Ids (-1 pads).
            /// columns : dict of str to numpy.ndarray
            ///     Only with ``columns``: each chosen column's value per hit, shaped like ``I``.
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     Examples of the wrong width or NaN, both negatives and random_negatives, more random
            ///     negatives than live rows, an exact mode, counts as ``search``.
            ///     A ``where`` that does not parse, names a column the index lacks or compares it with a
            ///     value of the wrong type (the message names the character column); a negative id
            ///     in ``ids``.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> D, I = idx.search_examples(x[:5], k=10, random_negatives=100, seed=1)
            /// >>> I.shape, bool((y[I[0]] == 0).all())
            /// ((1, 10), True)
            #[pyo3(signature = (
                examples, k=10, negatives=None, random_negatives=None, seed=1234, svm_c=None, mode=None,
                rerank=None, nprobe=None, classes=None, threads=1, r#where=None, ids=None, columns=None,
                as_frame=false,
            ))]
            #[allow(clippy::too_many_arguments)]
            pub fn search_examples<'py>(
                &self,
                py: Python<'py>,
                examples: &Bound<'py, PyAny>,
                k: i128,
                negatives: Option<&Bound<'py, PyAny>>,
                random_negatives: Option<i128>,
                seed: i128,
                svm_c: Option<f64>,
                mode: Option<&str>,
                rerank: Option<i128>,
                nprobe: Option<i128>,
                classes: Option<&Bound<'py, PyAny>>,
                threads: i128,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
                columns: Option<&Bound<'py, PyAny>>,
                as_frame: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let out = crate::result_columns::ResultColumns::new(columns, as_frame)?;
                let args = crate::query::QueryArgs::new(k, mode, rerank, nprobe, classes, threads, "auto", r#where, ids)?;
                let (negatives, svm) =
                    crate::query::example_args(negatives, random_negatives, seed, svm_c)?;
                crate::query::search_examples(py, &*self.queried()?, examples, negatives, &svm, &args, &out)
            }

            /// Rows ranked by a given linear classifier of their codes (the CLI's ``search --classifier``).
            ///
            /// Parameters
            /// ----------
            /// classifier : array_like of float, shape (D + 1,)
            ///     The weights over the decoded code (``Model.decode``'s columns), then the bias.
            /// k : int, default 10
            ///     Results per query. ``I`` has k columns, padded with -1 past the rows found (as FAISS);
            ///     a k above both the live rows and 65,536 is capped at the live rows (the CLI's rule).
            /// mode : str, optional, default None
            ///     How queries are compared with rows: "hamming", "asym", "adc", "adc-ip", "float",
            ///     "float-ip", "exact", "exact-ip" (None: the natural mode of the index's codes).
            /// rerank : int, optional, default None
            ///     Re-score the R best by the mode's score exactly against the stored vectors and keep the
            ///     k best (R ≥ k; the index must store vectors).
            /// nprobe : int, optional, default None
            ///     IVF: per query, scan the lists of the n nearest class means (ivf:K models: of the n
            ///     nearest k-means centroids).
            /// classes : iterable of str or int, optional, default None
            ///     Scan only the inverted lists of these classes (names or class ids).
            /// threads : int, default 1
            ///     Scan threads (0: every core).
            /// where : str, optional, default None
            ///     Only rows passing this filter expression, e.g. ``"id >= 100 AND id NOT IN (3, 7)"``
            ///     (the language: docs/filtering.md; the CLI's ``--where``).
            /// ids : iterable of int, optional, default None
            ///     Only rows with these ids: a list, set, range or numpy integer array (uint64, or
            ///     non-negative int64); FAISS's ``IDSelectorBatch``, the CLI's ``--ids``. Given with
            ///     ``where``, a row must pass both.
            /// columns : str or iterable of str, optional, default None
            ///     Attribute columns to return beside the hits (the CLI's ``--with``): the result gains a
            ///     third item, a dict of column name → numpy array shaped like ``I`` (int → int64, float →
            ///     float64, timestamp → datetime64[us], bool → bool, string → object array of str, tags →
            ///     object array of lists of str). A padding position (id -1) holds the column's default.
            /// as_frame : bool, default False
            ///     Return a pandas DataFrame instead of arrays: one row per hit (padding dropped), columns
            ///     ``query``, ``rank``, ``id`` (uint64), ``score``, then the ``columns``.
            ///
            /// Returns
            /// -------
            /// D : numpy.ndarray of float32, shape (1, k)
            ///     Scores ``bias + w·decode(code)``, larger is better (padding -inf).
            /// I : numpy.ndarray of int64, shape (1, k)
            ///     Ids (-1 pads).
            /// columns : dict of str to numpy.ndarray
            ///     Only with ``columns``: each chosen column's value per hit, shaped like ``I``.
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     A classifier of the wrong length or non-finite; re-ranking binary codes; counts as
            ///     ``search``.
            ///     A ``where`` that does not parse, names a column the index lacks or compares it with a
            ///     value of the wrong type (the message names the character column); a negative id
            ///     in ``ids``.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> w = np.append(model.decode(model.encode(x[:1]))[0], 0.0)
            /// >>> D, I = idx.search_classifier(w, k=3)
            /// >>> int(I[0, 0]), int(D[0, 0])
            /// (0, 16)
            #[pyo3(signature = (classifier, k=10, mode=None, rerank=None, nprobe=None, classes=None, threads=1, r#where=None, ids=None, columns=None, as_frame=false))]
            #[allow(clippy::too_many_arguments)]
            pub fn search_classifier<'py>(
                &self,
                py: Python<'py>,
                classifier: &Bound<'py, PyAny>,
                k: i128,
                mode: Option<&str>,
                rerank: Option<i128>,
                nprobe: Option<i128>,
                classes: Option<&Bound<'py, PyAny>>,
                threads: i128,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
                columns: Option<&Bound<'py, PyAny>>,
                as_frame: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let out = crate::result_columns::ResultColumns::new(columns, as_frame)?;
                let args = crate::query::QueryArgs::new(k, mode, rerank, nprobe, classes, threads, "auto", r#where, ids)?;
                crate::query::search_classifier(py, &*self.queried()?, classifier, &args, &out)
            }

            /// Every live row within Hamming ``radius`` of each query's code, as FAISS's ``range_search``.
            ///
            /// Parameters
            /// ----------
            /// q : array_like, shape (nq, d)
            ///     Query descriptors.
            /// radius : int
            ///     0, 1 or 2 (binary codes of at most 32 bits: a hash-table lookup, ITQ §4.5).
            /// where : str, optional, default None
            ///     Only rows passing this filter expression, e.g. ``"id >= 100 AND id NOT IN (3, 7)"``
            ///     (the language: docs/filtering.md; the CLI's ``--where``).
            /// ids : iterable of int, optional, default None
            ///     Only rows with these ids: a list, set, range or numpy integer array (uint64, or
            ///     non-negative int64); FAISS's ``IDSelectorBatch``, the CLI's ``--ids``. Given with
            ///     ``where``, a row must pass both.
            /// columns : str or iterable of str, optional, default None
            ///     Attribute columns to return beside the hits (the CLI's ``--with``): the result gains a
            ///     fourth item, a dict of column name → numpy array shaped like ``I`` (dtypes as ``search``).
            /// as_frame : bool, default False
            ///     Return a pandas DataFrame instead of arrays: one row per hit, columns ``query``,
            ///     ``rank``, ``id`` (uint64), ``score`` (int32), then the ``columns``.
            ///
            /// Returns
            /// -------
            /// lims : numpy.ndarray of int64, shape (nq + 1,)
            ///     Query i's results are ``D[lims[i]:lims[i+1]]``, ``I[lims[i]:lims[i+1]]``.
            /// D : numpy.ndarray of int32
            ///     Hamming distances, nearest first.
            /// I : numpy.ndarray of int64
            ///     Ids (their 64 bits, as ``search``).
            /// columns : dict of str to numpy.ndarray
            ///     Only with ``columns``: each chosen column's value per hit, shaped like ``I``.
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     A radius above 2, codes that are not binary or wider than 32 bits, a wrong width.
            ///     A ``where`` that does not parse, names a column the index lacks or compares it with a
            ///     value of the wrong type (the message names the character column); a negative id
            ///     in ``ids``.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> lims, D, I = idx.search_radius(x[:2], 0)
            /// >>> lims.shape, int(I[lims[0]])
            /// ((3,), 0)
            #[pyo3(signature = (q, radius, r#where=None, ids=None, columns=None, as_frame=false))]
            #[allow(clippy::too_many_arguments)]
            pub fn search_radius<'py>(
                &self,
                py: Python<'py>,
                q: &Bound<'py, PyAny>,
                radius: i128,
                r#where: Option<&str>,
                ids: Option<&Bound<'py, PyAny>>,
                columns: Option<&Bound<'py, PyAny>>,
                as_frame: bool,
            ) -> PyResult<Bound<'py, PyAny>> {
                let out = crate::result_columns::ResultColumns::new(columns, as_frame)?;
                let radius = crate::arrays::small(radius, "radius", u32::MAX)?;
                let filter = crate::query::FilterArgs::new(r#where, ids)?;
                crate::query::search_radius(py, &*self.queried()?, q, radius, &filter, &out)
            }

            /// The ``top`` nearest class means per row (NCM, Mensink et al. TPAMI 2013, eq. 9).
            ///
            /// Parameters
            /// ----------
            /// x : array_like, shape (n, d)
            ///     Descriptors (an empty batch gives ``(0, top)`` arrays).
            /// top : int, default 5
            ///     Classes per row; ids -1 past the last class (a top above both the classes and 65,536 is
            ///     capped at the classes).
            ///
            /// Returns
            /// -------
            /// scores : numpy.ndarray of float32, shape (n, top)
            ///     Larger is better (padding -inf).
            /// ids : numpy.ndarray of int64, shape (n, top)
            ///     Class ids, best first; names via ``classes``.
            ///
            /// Raises
            /// ------
            /// NotFoundError
            ///     The index has no classes.
            /// InvalidArgument
            ///     Wrong width, NaN, top < 1.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> scores, cls = idx.classify(x[[0, 300, 599]], top=2)
            /// >>> cls[:, 0].tolist()
            /// [0, 1, 2]
            #[pyo3(signature = (x, top=5))]
            pub fn classify<'py>(
                &self,
                py: Python<'py>,
                x: &Bound<'py, PyAny>,
                top: i128,
            ) -> PyResult<crate::query::Pair<'py>> {
                let top = crate::arrays::count(top, "top", 1)?;
                crate::query::classify(py, &*self.queried()?, x, top)
            }

            /// The stored vectors of rows, by id (FAISS's ``reconstruct`` / ``reconstruct_n``).
            ///
            /// Parameters
            /// ----------
            /// ids : array_like of int
            ///     Live row ids (uint64, or non-negative int64).
            ///
            /// Returns
            /// -------
            /// numpy.ndarray of float32, shape (len(ids), d)
            ///     The vectors as stored (f16 vectors come back rounded).
            ///
            /// Raises
            /// ------
            /// InvalidArgument
            ///     The index stores no vectors (``store_vectors=None``: decode its codes with the model), or
            ///     a negative id.
            /// NotFoundError
            ///     An id that is not a live row.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> bool((idx.reconstruct([0, 5]) == x[[0, 5]]).all())
            /// True
            pub fn reconstruct<'py>(
                &self,
                py: Python<'py>,
                ids: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyAny>> {
                crate::query::reconstruct(py, &*self.queried()?, ids)
            }

            /// The committed classes: ``{class id: name}``.
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> sorted(idx.classes)
            /// [0, 1, 2]
            #[getter]
            pub fn classes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
                crate::query::classes(py, &*self.queried()?)
            }

            /// The class table as counts and sums: ``(dim, [{"id", "name", "parent", "count", "sum"}])``.
            ///
            /// What ``codedb.distributed`` adds up over shards (the table is additive); ``dim`` is 0 without
            /// a class table.
            ///
            /// Returns
            /// -------
            /// tuple of (int, list of dict)
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> dim, table = idx.class_sums()
            /// >>> dim, [c["count"] for c in table]
            /// (32, [200, 200, 200])
            pub fn class_sums<'py>(&self, py: Python<'py>) -> PyResult<(usize, Bound<'py, pyo3::types::PyList>)> {
                crate::query::class_sums(py, &*self.queried()?)
            }

            /// Manifests newer than the served version that did not read: ``[{"version", "file",
            /// "error"}]`` (as ``inspect()["skipped_manifests"]``). Empty unless the open fell back (then a
            /// :class:`codedb.FallbackWarning` was raised, and writes raise :class:`codedb.FellBackError`).
            ///
            /// Examples
            /// --------
            /// >>> idx = codedb.Index.build(path, model, x, labels=y, store_vectors="f32")
            /// >>> idx.skipped_manifests
            /// []
            #[getter]
            pub fn skipped_manifests<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
                crate::query::skipped(py, &*self.queried()?)
            }

            $($after)*

            /// A `with` block closes the handle at its end (`close`: the class's own).
            fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
                slf
            }

            #[pyo3(signature = (*_args))]
            fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
                self.close();
                false
            }

        }
    };
}

pub(crate) use query_methods;
