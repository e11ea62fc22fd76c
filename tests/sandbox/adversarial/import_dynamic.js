// attack: dynamic import()
// phase: producer
// expect: logic_error
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const os = await import('os');
    return typeof os;
  } } },
});
