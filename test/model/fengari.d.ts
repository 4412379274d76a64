// fengari (a Lua 5.3 VM in JavaScript) ships no types; test/model/lua-vm.ts is its only user.
declare module 'fengari' {
  const fengari: any;
  export default fengari;
}
