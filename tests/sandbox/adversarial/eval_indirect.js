// attack: indirect eval through globalThis
// phase: producer
// expect: logic_error:TypeError
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    return (0, globalThis['ev' + 'al'])('1 + 1');
  } } },
});
