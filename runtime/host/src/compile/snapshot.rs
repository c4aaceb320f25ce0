//! Initialising a provider once per version and configuration rather than
//! in every call: Wizer instruments the component so that its memories and
//! globals can be read, `initialize` runs once in an instance of it, and
//! that instance's state is written back as the initial state of a new
//! component, which every call then starts from, copy-on-write.
//!
//! What a provider sets up in `initialize` (its parsed configuration, its
//! clients) is then paid once, and every call still starts from a clean
//! copy of it. A provider that holds host resources (open streams, say)
//! when `initialize` returns cannot be snapshotted, since they live in the
//! host's table and not in its memory: such a provider is initialised in
//! every call instead.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Instance, Lift, WasmList};
use wasmtime_wizer::{ComponentContext, ComponentInstanceState, Wizer};

self_cell::self_cell!(
    /// What instrumenting a component learnt of it, which the snapshot of
    /// an instance of the instrumented component needs, kept with the
    /// original component's bytes it refers to.
    pub(crate) struct Instrumented {
        owner: Arc<[u8]>,
        #[covariant]
        dependent: ComponentContext,
    }
);

/// Instruments `wasm` for a snapshot: the component with exports through
/// which its state can be read, and what the snapshot needs to know of it.
///
/// # Errors
/// When Wizer cannot instrument the component (a construct it does not
/// support, such as a component start function).
pub(crate) fn instrument(wasm: Arc<[u8]>) -> wasmtime::Result<(Instrumented, Vec<u8>)> {
    let mut instrumented_wasm = Vec::new();
    let instrumented = Instrumented::try_new(wasm, |wasm| {
        let (context, bytes) = Wizer::new().instrument_component(wasm)?;
        instrumented_wasm = bytes;
        Ok::<_, wasmtime::Error>(context)
    })?;
    Ok((instrumented, instrumented_wasm))
}

/// The component whose initial state is `instance`'s state now, for an
/// instance of the component [`instrument`] wrote.
///
/// # Errors
/// When reading the instance's state failed, for example at the deadline.
pub(crate) async fn snapshot<T: Send + 'static>(
    instrumented: &Instrumented,
    store: &mut Store<T>,
    instance: Instance,
) -> wasmtime::Result<Vec<u8>> {
    let mut state = State { store, instance, failure: None };
    let snapshot = Wizer::new().snapshot_component(instrumented.borrow_dependent(), &mut state).await?;
    match state.failure {
        Some(failure) => Err(failure),
        None => Ok(snapshot),
    }
}

/// An instrumented instance's state, read through its accessors. The
/// accessors cannot report a failure to Wizer: the first one is kept, and
/// the snapshot taken meanwhile is discarded.
struct State<'a, T: 'static> {
    store: &'a mut Store<T>,
    instance: Instance,
    failure: Option<wasmtime::Error>,
}

impl<T: Send> State<'_, T> {
    async fn read<R: Lift + Send + Sync + 'static, V>(
        &mut self,
        instance: &str,
        function: &str,
        value: impl FnOnce(&mut Store<T>, R) -> V,
        fallback: V,
    ) -> V {
        if self.failure.is_some() {
            return fallback;
        }
        let call = async {
            let (_, exported) = self
                .instance
                .get_export(&mut *self.store, None, instance)
                .ok_or_else(|| wasmtime::format_err!("no export {instance}"))?;
            let (_, index) = self
                .instance
                .get_export(&mut *self.store, Some(&exported), function)
                .ok_or_else(|| wasmtime::format_err!("no export {instance}#{function}"))?;
            let typed = self.instance.get_typed_func::<(), (R,)>(&mut *self.store, index)?;
            let (result,) = typed.call_async(&mut *self.store, ()).await?;
            Ok::<R, wasmtime::Error>(result)
        };
        match call.await {
            Ok(result) => value(self.store, result),
            Err(err) => {
                self.failure = Some(err);
                fallback
            }
        }
    }
}

impl<T: Send> ComponentInstanceState for State<'_, T> {
    async fn call_func_ret_list_u8(&mut self, instance: &str, func: &str, contents: impl FnOnce(&[u8]) + Send) {
        let mut contents = Some(contents);
        let slot = &mut contents;
        let read = |store: &mut Store<T>, list: WasmList<u8>| {
            if let Some(contents) = slot.take() {
                contents(list.as_le_slice(&store));
            }
        };
        self.read(instance, func, read, ()).await;
        if let Some(contents) = contents {
            contents(&[]);
        }
    }

    async fn call_func_ret_s32(&mut self, instance: &str, func: &str) -> i32 {
        self.read(instance, func, |_, value: i32| value, 0).await
    }

    async fn call_func_ret_s64(&mut self, instance: &str, func: &str) -> i64 {
        self.read(instance, func, |_, value: i64| value, 0).await
    }

    async fn call_func_ret_f32(&mut self, instance: &str, func: &str) -> u32 {
        self.read(instance, func, |_, value: f32| value.to_bits(), 0).await
    }

    async fn call_func_ret_f64(&mut self, instance: &str, func: &str) -> u64 {
        self.read(instance, func, |_, value: f64| value.to_bits(), 0).await
    }
}
