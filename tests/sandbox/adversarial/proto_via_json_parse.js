// attack: __proto__ key through JSON.parse and Object.assign
// phase: producer
// expect: completed:[true,false]
export default Keep.workflow({
  producers: { h: { handler: async (ctx, state) => {
    const o = JSON.parse('{"__proto__": {"polluted": 1}}');
    const t = Object.assign({}, o);
    return [({}).polluted === undefined, t.polluted === undefined];
  } } },
});
