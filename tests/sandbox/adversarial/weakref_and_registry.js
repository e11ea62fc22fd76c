// attack: WeakRef and FinalizationRegistry
// phase: producer
// expect: completed:["undefined","undefined","undefined"]
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return [typeof WeakRef, typeof FinalizationRegistry, typeof SharedArrayBuffer];
  } } },
});
